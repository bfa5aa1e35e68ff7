import { once } from "node:events";

/**
 * A spare worker process: it loads every module of `src/worker/main.ts` (the slow part of a
 * start, about a second of CPU from the compiled entries), prints FOYA_WORKER_WARM, and waits for SIGUSR2; then it
 * runs `src/worker/main.ts` exactly as `npm run worker` does, up in well under a second.
 * The chaos test replaces each killed worker with one, so kills keep their pace on a busy machine.
 */
const go = once(process, "SIGUSR2");
// A signal listener alone does not keep Node running.
const idle = setInterval(() => {}, 60_000);
await import("../../src/process.js");
console.log("FOYA_WORKER_WARM");
await go;
clearInterval(idle);
await import("../../src/worker/main.js");
