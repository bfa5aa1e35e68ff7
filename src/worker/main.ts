import { runProcess } from "../process.js";
import { startWorkerRuntime } from "./worker-runtime.js";

await runProcess({ worker: startWorkerRuntime });
