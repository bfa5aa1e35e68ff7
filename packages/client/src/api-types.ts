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
