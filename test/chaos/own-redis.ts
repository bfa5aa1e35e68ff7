import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";
import { Redis } from "ioredis";
import { redisAnswers } from "../helpers/redis-answers.js";

/**
 * A redis-server of the test's own, on a free port, without persistence: the chaos
 * test flushes and restarts it, and nothing else (the suite's Redis, other test files)
 * is touched. Killed with the test process if it is left running.
 */
export interface OwnRedis {
  readonly port: number;
  readonly url: string;
  /** Whether the server process is up (between `restart`'s kill and start it is not). */
  running(): boolean;
  /** FLUSHALL: every key of every database is gone; connections stay. */
  flushAll(): Promise<void>;
  /** SIGKILL, then a new server on the same port once the old one has exited (empty: there is no persistence). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export async function startOwnRedis(): Promise<OwnRedis> {
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  let output = "";
  const killOnExit = () => child?.kill("SIGKILL");
  process.once("exit", killOnExit);

  async function start(): Promise<void> {
    const started = spawn(
      "redis-server",
      ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no"],
      {
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    child = started;
    started.stdout?.on("data", (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000)));
    started.stderr?.on("data", (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000)));
    const deadline = Date.now() + 10_000;
    while (!(await redisAnswers(url, 500))) {
      if (started.exitCode !== null || started.signalCode !== null || Date.now() > deadline) {
        started.kill("SIGKILL");
        throw new Error(`redis-server on port ${port} did not start:\n${output}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  async function kill(): Promise<void> {
    const current = child;
    if (!current || current.exitCode !== null || current.signalCode !== null) return;
    const exited = once(current, "exit");
    current.kill("SIGKILL");
    await exited;
  }

  await start();
  return {
    port,
    url,
    running: () => child !== undefined && child.exitCode === null && child.signalCode === null,
    async flushAll() {
      const redis = new Redis(url, { maxRetriesPerRequest: 1, retryStrategy: () => null, lazyConnect: true });
      try {
        await redis.connect();
        await redis.flushall();
      } finally {
        redis.disconnect();
      }
    },
    async restart() {
      await kill();
      await start();
    },
    async stop() {
      await kill();
      process.removeListener("exit", killOnExit);
    },
  };
}

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  server.close();
  await once(server, "close");
  if (!address || typeof address === "string") throw new Error("no free port");
  return address.port;
}
