import net from "node:net";

/**
 * A TCP forwarder a test puts between a Foya process and Postgres or Redis, to take the
 * dependency away from that process only (the shared servers stay up for the other test
 * files). While dropping, it cuts every open connection and resets each new one at once,
 * as a server that went away would; the port stays bound, so nothing else can take it.
 */
export interface TcpProxy {
  readonly port: number;
  /** Connections reset while dropping. */
  readonly refused: number;
  /** Connections forwarded so far. */
  readonly forwarded: number;
  /** Forwards new connections to the target. */
  forward(): void;
  /** Cuts every open connection and resets new ones until `forward`. */
  drop(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }, options: { forwarding: boolean }): Promise<TcpProxy> {
  let forwarding = options.forwarding;
  let refused = 0;
  let forwarded = 0;
  const open = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    open.add(socket);
    socket.on("close", () => open.delete(socket));
  };
  const server = net.createServer((client) => {
    if (!forwarding) {
      refused++;
      client.on("error", () => {});
      client.resetAndDestroy();
      return;
    }
    forwarded++;
    const upstream = net.connect(target.port, target.host);
    track(client);
    track(upstream);
    const cut = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("error", cut);
    upstream.on("error", cut);
    client.on("close", cut);
    upstream.on("close", cut);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    port,
    get refused() {
      return refused;
    },
    get forwarded() {
      return forwarded;
    },
    forward() {
      forwarding = true;
    },
    drop() {
      forwarding = false;
      for (const socket of open) socket.resetAndDestroy();
    },
    async close() {
      forwarding = false;
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** `url` with its host and port replaced by the proxy's. */
export function viaProxy(url: string, proxy: TcpProxy): string {
  const rewritten = new URL(url);
  rewritten.hostname = "127.0.0.1";
  rewritten.port = String(proxy.port);
  return rewritten.toString();
}

/** The host and port a connection string names. */
export function targetOf(url: string, defaultPort: number): { host: string; port: number } {
  const parsed = new URL(url);
  return { host: parsed.hostname.replace(/^\[|\]$/g, ""), port: parsed.port ? Number(parsed.port) : defaultPort };
}
