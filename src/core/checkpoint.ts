/**
 * A workspace checkpoint's vocabulary (SPEC W1): what one entry of a workspace tree is. The
 * logical fields say what the tree holds; the stat fields only let the next capture on the same
 * host skip hashing what did not move.
 */
export type CheckpointEntryKind = "file" | "directory" | "symlink";

/**
 * Why a checkpoint was taken. `batch`: after a tool batch; `catch_up`: the project's own changes
 * since, before a batch; `before_rewind`: the folder as it stood when a rewind was asked for;
 * `rewind` and `fork`: an earlier tree made the latest again (W2), not captured from a folder.
 */
export type CheckpointReason = "batch" | "catch_up" | "before_rewind" | "rewind" | "fork";
