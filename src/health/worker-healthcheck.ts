/**
 * Container health check of a worker (docker-compose.yml): exits 0 when the heartbeat file
 * (FOYA_WORKER_HEARTBEAT_FILE) was rewritten within 10 s by a live process, else prints why
 * and exits 1. See `startHeartbeatFile` for what that does and does not say.
 */
import { loadConfig } from "../config.js";
import { heartbeatProblem } from "./heartbeat-file.js";

const file = loadConfig().workers.heartbeatFile;
const problem = file === undefined ? "FOYA_WORKER_HEARTBEAT_FILE is not set" : await heartbeatProblem(file);
if (problem !== undefined) console.error(`unhealthy: ${problem}`);
process.exit(problem === undefined ? 0 : 1);
