/**
 * How the processes of one call are confined (SPEC S3, S8). Every call's
 * processes run under bubblewrap, as the tenant's uid, within its limits, in
 * their own PID namespace that dies with the call, its cancel and its worker;
 * what differs is what they see.
 */
export type Confinement =
  /** Outside Full Access: the workspace writable, a read-only whitelist of the system, the network only when granted. */
  | { kind: "sandbox"; network: boolean }
  /**
   * Full Access, granted by the operator: the host's file system as the
   * tenant's own uid sees it (the service's secrets and other workspaces
   * hidden), and the network, without the host's loopback services.
   */
  | { kind: "full_access" };
