/** A glob pattern refused for a reason the model (or a policy's author) can fix; caught at the boundary and returned as a value. */
export class GlobRefusal extends Error {
  constructor(
    message: string,
    readonly outside = false,
  ) {
    super(message);
  }
}
