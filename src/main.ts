import { startHttpServerEarly } from "./api/http-server.js";
import { runProcess } from "./process.js";
import { startWorkerRuntime } from "./worker/worker-runtime.js";

await runProcess({ api: startHttpServerEarly, worker: startWorkerRuntime });
