import type { CaptureRewindTip } from "../branches/capture-rewind-tip.js";
import { isFoyaError } from "../errors.js";
import type { Logger } from "../logger.js";
import type { HostRequests } from "./host-requests.js";

/** A host that cannot answer leaves the rewind to go on: the project's latest checkpoint is then the tip. */
const unanswered = new Set(["no_worker", "worker_timeout", "unavailable", "internal"]);

/**
 * A rewind's look at the folder (SPEC W2), asked of the host the project is placed on now (SPEC
 * W3). A project placed nowhere live has no folder newer than its latest checkpoint, and a host
 * that does not answer is not waited for again: either way the latest checkpoint is the tip.
 */
export function rewindTipViaHost(hostRequests: Pick<HostRequests, "ask">, logger: Pick<Logger, "warn">): CaptureRewindTip {
  return async (scope) => {
    try {
      return await hostRequests.ask(scope, { operation: "capture-rewind-tip", sessionId: scope.sessionId }, "placed");
    } catch (error) {
      if (!isFoyaError(error) || !unanswered.has(error.code)) throw error;
      logger.warn(
        { err: error, projectId: scope.projectId },
        "the project's host did not look at its folder before a rewind; its latest checkpoint is the tip",
      );
      return { kind: "none" };
    }
  };
}
