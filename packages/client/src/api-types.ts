import type { Client } from "openapi-fetch";
import type { components, paths } from "./generated/openapi.js";

/** The typed `openapi-fetch` client over every route of the API. */
export type FoyaApi = Client<paths>;

type Schemas = components["schemas"];
export type Session = Schemas["Session"];
export type Run = Schemas["Run"];
export type RunCreate = Schemas["RunCreate"];
export type Approval = Schemas["Approval"];
export type FileChange = Schemas["FileChange"];
export type FileChangeWithDiff = Schemas["FileChangeWithDiff"];
export type Message = Schemas["Message"];
/** Where a fork or a rewind goes: after a run (or one of its steps), a step of the latest run, or a message. */
export type BranchPoint = Schemas["BranchPoint"];
/** A rewind's target: a point as for a fork, or back to the tip of a branch an earlier rewind set aside. */
export type RewindPoint = BranchPoint | { branchId: string };
export type Branch = Schemas["Branch"];
export type Forked = paths["/v1/sessions/{id}/fork"]["post"]["responses"][201]["content"]["application/json"];
export type Rewound = paths["/v1/sessions/{id}/rewind"]["post"]["responses"][200]["content"]["application/json"];
