/** A file change produced by a tool (SPEC F1); stored and shown to clients, never to the model. */
export interface FileChangeRecord {
  path: string;
  existedBefore: boolean;
  modeBefore: number | null;
  modeAfter: number | null;
  sha256Before: string | null;
  sha256After: string | null;
  diff: string;
}
