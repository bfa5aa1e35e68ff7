/**
 * What a sub-command was found to do. The gateway denies `permanent_delete`
 * outside Full Access (F4) and asks for the rest: `destructive` loses data no
 * trash keeps (discarded git work, an emptied file), `unknown` runs or reads
 * something only known at run time (a variable, a script file), `unparsed`
 * could not be read.
 */
export type FindingKind = "permanent_delete" | "destructive" | "network" | "dangerous" | "outside" | "unknown" | "unparsed";

export interface ShellFinding {
  kind: FindingKind;
  /** Says why, naming the program or path. */
  reason: string;
}

export const deleteTool = "use the delete tool, which moves files to the trash";
