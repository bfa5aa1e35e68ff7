import { runProcess } from "./process.js";

await runProcess({ api: true, worker: true });
