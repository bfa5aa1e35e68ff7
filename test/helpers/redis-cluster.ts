import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { execa, type ResultPromise } from "execa";
import { Redis } from "ioredis";
import { freePort } from "./free-port.js";
import { waitFor } from "./api-client.js";

/**
 * A real Redis Cluster of three masters (no replicas), started from the installed `redis-server`
 * and joined with `redis-cli --cluster create`, each node in memory only (no RDB, no AOF) with its
 * files in a temporary folder. For tests that prove Foya on a cluster (SPEC W4).
 */
export interface RedisCluster {
  /** The nodes' URLs, comma-separated: REDIS_URL with FOYA_REDIS_CLUSTER=true. */
  readonly url: string;
  readonly ports: readonly number[];
  /** A plain connection to one node, kept until `stop` (CLUSTER KEYSLOT, PUBSUB, SCAN of that node's keys). */
  node(port: number): Redis;
  stop(): Promise<void>;
}

/** Why a cluster cannot be started here (no `redis-server` or `redis-cli` on PATH), or undefined. */
export async function redisClusterUnavailable(): Promise<string | undefined> {
  for (const program of ["redis-server", "redis-cli"]) {
    const found = await execa("sh", ["-c", `command -v ${program}`], { reject: false });
    if (found.exitCode !== 0) return `${program} is not installed (not found on PATH)`;
  }
  return undefined;
}

export async function startRedisCluster(size = 3): Promise<RedisCluster> {
  const dir = await mkdtemp(path.join(tmpdir(), "foya-redis-cluster-"));
  const servers: ResultPromise[] = [];
  const connections = new Map<number, Redis>();
  const ports: number[] = [];
  const stop = async () => {
    for (const connection of connections.values()) connection.disconnect();
    for (const server of servers) server.kill("SIGKILL");
    await Promise.all(servers.map((server) => server.catch(() => undefined)));
    await execa("rm", ["-rf", "--", dir]);
  };
  try {
    for (let i = 0; i < size; i++) {
      const port = await freePort();
      // The cluster bus port is chosen too: port + 10000 (Redis's default) may be taken or out of range.
      const busPort = await freePort();
      ports.push(port);
      servers.push(
        execa(
          "redis-server",
          [
            ...["--port", String(port), "--bind", "127.0.0.1", "--dir", dir],
            ...["--cluster-enabled", "yes", "--cluster-config-file", `nodes-${port}.conf`, "--cluster-port", String(busPort)],
            ...["--cluster-node-timeout", "5000", "--save", "", "--appendonly", "no", "--daemonize", "no"],
          ],
          { reject: false, stdio: "ignore" },
        ),
      );
    }
    const node = (port: number) => {
      let connection = connections.get(port);
      if (!connection) {
        connection = new Redis(port, "127.0.0.1", { maxRetriesPerRequest: 1 });
        connection.on("error", () => {});
        connections.set(port, connection);
      }
      return connection;
    };
    const nodes = ports.map(node);
    await waitFor(
      async () => (await Promise.all(nodes.map((connection) => connection.ping().catch(() => "")))).every((answer) => answer === "PONG"),
      15_000,
      "the Redis nodes to answer",
    );
    await execa("redis-cli", [
      "--cluster",
      "create",
      ...ports.map((port) => `127.0.0.1:${port}`),
      "--cluster-replicas",
      "0",
      "--cluster-yes",
    ]);
    await waitFor(
      async () =>
        (await Promise.all(nodes.map((connection) => connection.cluster("INFO").catch(() => "")))).every((info) =>
          /cluster_state:ok/.test(String(info)),
        ),
      30_000,
      "every node of the Redis Cluster to say cluster_state:ok",
    );
    return {
      url: ports.map((port) => `redis://127.0.0.1:${port}`).join(","),
      ports,
      node,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
