import { runProcess } from "../process.js";

await runProcess({ api: false, worker: true });
