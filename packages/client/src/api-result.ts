import { FoyaApiError } from "./foya-api-error.js";

/** What an `openapi-fetch` call answers: `data` on success, the parsed body as `error` otherwise. */
interface ApiResult {
  data?: unknown;
  error?: unknown;
  response: Response;
}

/** The data of a successful answer; any other answer throws a `FoyaApiError`. */
export function unwrap<Result extends ApiResult>(result: Result): NonNullable<Result["data"]> {
  if (result.error !== undefined || !result.response.ok || result.data === undefined) {
    throw FoyaApiError.fromBody(result.response, result.error);
  }
  return result.data as NonNullable<Result["data"]>;
}
