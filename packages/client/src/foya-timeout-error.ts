/** A wait (`runs.wait`) that reached its `timeoutMs` before the run ended; the run goes on. */
export class FoyaTimeoutError extends Error {
  override readonly name = "FoyaTimeoutError";
  readonly code = "timeout";
}
