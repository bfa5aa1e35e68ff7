/**
 * A project's workspace on the host that holds it (SPEC W3): the host's workspace root (its trash
 * staging folder, the projects' trash) and the project's folder under it. File operations the API
 * asks for run there, on the project's host (src/hosts/host-request.ts).
 */
export interface HostFolder {
  workspacesDir: string;
  workspaceDir: string;
}
