/** The uid and gid a tenant's tool processes run as on the host (SPEC S7); chosen in src/sandbox/tool-identity.ts. */
export interface ProcessIdentity {
  uid: number;
  gid: number;
}
