import path from "node:path";
import { execa, type ResultPromise } from "execa";
import { repoRoot } from "./test-env.js";

/** A real Foya process (API or worker) started with tsx, as `npm run api` / `npm run worker` would. */
export interface FoyaProcess {
  readonly pid: number;
  /** The API's URL, for API processes. */
  readonly url: string | undefined;
  output(): string;
  kill(signal: NodeJS.Signals): void;
  /** Resolves with the exit code (or signal) once the process has ended. */
  exited: Promise<{ code: number | undefined; signal: string | undefined }>;
}

export async function startFoyaProcess(role: "api" | "worker", env: Record<string, string>, timeoutMs = 30_000): Promise<FoyaProcess> {
  const entry = path.join(repoRoot, role === "api" ? "src/api/main.ts" : "src/worker/main.ts");
  const child: ResultPromise = execa(process.execPath, ["--import", "tsx", entry], {
    cwd: repoRoot,
    env: { ...env, PORT: "0" },
    extendEnv: true,
    reject: false,
    all: true,
    buffer: false,
  });
  let output = "";
  child.all?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = child.then((result) => ({ code: result.exitCode, signal: result.signal }));
  const marker = role === "api" ? /FOYA_API_URL=(\S+)/ : /FOYA_WORKER_ID=(\S+)/;
  const deadline = Date.now() + timeoutMs;
  let ended = false;
  void exited.then(() => {
    ended = true;
  });
  for (;;) {
    const match = marker.exec(output);
    if (match) {
      return {
        pid: child.pid as number,
        url: role === "api" ? match[1] : undefined,
        output: () => output,
        kill: (signal) => void child.kill(signal),
        exited,
      };
    }
    if (ended || Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`${role} process did not start:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The Foya processes a test file starts: each started with the given environment, all killed at the end (`killAll`). */
export interface ProcessGroup {
  start(role: "api" | "worker", env: Record<string, string>): Promise<FoyaProcess>;
  /** SIGKILLs every process started so far and waits for them to end. */
  killAll(): Promise<void>;
}

export function processGroup(): ProcessGroup {
  const started: FoyaProcess[] = [];
  return {
    async start(role, env) {
      const child = await startFoyaProcess(role, env);
      started.push(child);
      return child;
    },
    async killAll() {
      for (const child of started.splice(0)) {
        child.kill("SIGKILL");
        await child.exited;
      }
    },
  };
}
