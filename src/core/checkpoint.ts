/**
 * A workspace checkpoint's vocabulary (SPEC W1): what one entry of a workspace tree is. The
 * logical fields say what the tree holds; the stat fields only let the next capture on the same
 * host skip hashing what did not move.
 */
export type CheckpointEntryKind = "file" | "directory" | "symlink";

/** Why a checkpoint was taken. */
export type CheckpointReason = "batch" | "catch_up" | "before_rewind";
