import { closeSync, fstatSync, openSync, statSync } from "node:fs";
import { isIPv4 } from "node:net";
import type { Readable, Writable } from "node:stream";
import { startChild, type StartedChild } from "../processes/start-child.js";

/**
 * The network of a network-granted sandbox (SPEC S3). The sandbox never
 * shares the host's network namespace: that would hand it the host's loopback
 * (Postgres and Redis on 127.0.0.1, trusted without a password) and every
 * other local service. It gets its own namespace instead, like every sandbox,
 * and slirp4netns connects it to the outside through a tap device (user-mode
 * NAT: 10.0.2.100/24 inside, gateway 10.0.2.2, DNS 10.0.2.3).
 *
 * The handshake (see `spawn-shell.ts`):
 * 1. `unshare --user --map-root-user --net` makes a user namespace owned by
 *    the worker and a network namespace it owns, and runs bwrap there, with
 *    `--block-fd` and without `--unshare-net`. (With bwrap's own namespace,
 *    bwrap brings up its loopback while slirp4netns brings it up too; under
 *    load a tenth of such sandboxes died on "loopback: Failed RTM_NEWADDR".)
 * 2. bwrap reports its child's pid on the status fd: the sandbox exists, the
 *    command has not started (bwrap waits on the block fd).
 * 3. The worker opens that pid's network namespace and bwrap's user
 *    namespace and checks them: the sandbox's network namespace is bwrap's
 *    (bwrap is the worker's child; its pid cannot have been reused), and
 *    neither is the worker's own. Nothing can then point slirp4netns at the
 *    host's network.
 * 4. slirp4netns starts on those open namespaces and writes "1" on its ready
 *    fd once lo and tap0 are up, tap0 with 10.0.2.100 and the default route.
 * 5. The worker writes one byte to bwrap's block fd: the command runs.
 * If a step fails, or slirp4netns does not report ready in time, the sandbox
 * is killed before the command ran: the call fails closed. If slirp4netns
 * exits by itself later, the sandbox is killed too, and the call says why.
 * The sandbox's own user namespaces lie below the one owning the network
 * namespace, and it holds no capability: it cannot reconfigure its network.
 *
 * slirp4netns flags:
 * - `--disable-host-loopback`: the gateway alias 10.0.2.2 (and the rest of
 *   10.0.2.0/24) is refused instead of being forwarded to the host's 127.0.0.1.
 * - never `--disable-dns`: with slirp4netns 1.2.0 / libslirp 4.7.0 it makes
 *   10.0.2.3 accept TCP connections on any port instead of refusing them
 *   (found by probing; nothing answered through them, but it is not kept).
 *   With the built-in DNS, 10.0.2.3 forwards to the host's first IPv4
 *   nameserver, and is refused when that is a loopback address (checked with
 *   a host resolver on 127.0.0.1 and on 127.0.0.53).
 * - `--netns-type=path --userns-path`: the namespaces checked in step 3,
 *   passed as open fds. (Given a pid, slirp4netns would join that pid's user
 *   namespace, the sandbox's, which has no right over the network namespace.)
 * - `--enable-sandbox --enable-seccomp`: slirp4netns parses every packet the
 *   sandboxed command sends and runs with the worker's privileges, so it
 *   confines itself (its own mount namespace, capabilities dropped but
 *   CAP_NET_BIND_SERVICE, a syscall filter without execve, ptrace, setns,
 *   mount...) before it reads the first one. Its mount namespace needs
 *   CAP_SYS_ADMIN: the worker runs as root (in a container: with SYS_ADMIN
 *   and /dev/net/tun).
 * - `--exit-fd`: the worker holds the other end; if the worker dies, even by
 *   SIGKILL, the fd closes and slirp4netns exits, so it never outlives it.
 *
 * slirp4netns does not exit when the sandbox ends (its tap device keeps the
 * namespace alive): the worker kills it when bwrap exits or the call stops.
 */

/** The interface slirp4netns creates inside the sandbox. */
const sandboxTapName = "tap0";
/** slirp4netns's built-in DNS forwarder, as the sandbox sees it. */
const slirpDnsAddress = "10.0.2.3";

/** slirp4netns's arguments before its ready/exit fds, the sandbox's pid and the tap name. */
const slirpArguments: readonly string[] = ["--configure", "--mtu=65520", "--disable-host-loopback", "--enable-sandbox", "--enable-seccomp"];

/** How long slirp4netns may take to configure the sandbox's network before the call fails. */
const readyTimeoutMs = 10_000;

const isLoopbackV4 = (address: string) => address.startsWith("127.") || address === "0.0.0.0";

const nameservers = (text: string | undefined): string[] =>
  (text ?? "").split("\n").flatMap((line) => {
    const found = /^\s*nameserver\s+(\S+)/.exec(line);
    const address = found?.[1];
    return address ? [address] : [];
  });

/**
 * The resolv.conf a network-granted sandbox sees instead of the host's.
 * slirp4netns's DNS at 10.0.2.3 forwards to the host's first IPv4 nameserver;
 * when that is a loopback resolver (systemd-resolved's 127.0.0.53, a dnsmasq
 * on 127.0.0.1), slirp4netns refuses it like any other path to the host's
 * loopback, so the sandbox is given the host's non-loopback nameservers
 * directly (reached through slirp4netns's NAT): those of `host`, else those
 * systemd-resolved uses upstream (`upstream`). The host's search domains and
 * resolver options are kept.
 */
export function sandboxResolvConf(host: string | undefined, upstream: string | undefined): string {
  const kept = (host ?? "").split("\n").filter((line) => /^\s*(search|domain|options)\s/.test(line));
  const firstV4 = nameservers(host).find(isIPv4);
  let servers = [slirpDnsAddress];
  if (firstV4 === undefined || isLoopbackV4(firstV4)) {
    const direct = [nameservers(host), nameservers(upstream)]
      .map((list) => list.filter((address) => isIPv4(address) && !isLoopbackV4(address)))
      .find((list) => list.length > 0);
    if (direct) servers = direct.slice(0, 3);
  }
  return `${[...kept, ...servers.map((address) => `nameserver ${address}`)].join("\n")}\n`;
}

/** slirp4netns attached to one sandbox. */
export interface NetworkLink {
  /** Settles once lo and tap0 are configured, or with why slirp4netns failed before that. Never rejects. */
  ready: Promise<{ ok: true } | { ok: false; reason: string }>;
  /** Settles, with why, if slirp4netns exits by itself after it was ready; never if it was stopped. */
  lost: Promise<string>;
  /** Kills slirp4netns (SIGKILL, and its exit fd closed); safe to call any number of times. */
  stop(): void;
}

/**
 * Opens the network namespace of the sandbox's init `pid` and the user
 * namespace of `bwrapPid` (bwrap, the worker's child, which `unshare` put in
 * them): the two fds, or why not. The network namespace must be bwrap's, and
 * neither may be the worker's own.
 */
function openNamespaces(pid: number, bwrapPid: number): { net: number; user: number } | string {
  const opened: number[] = [];
  try {
    const net = openSync(`/proc/${pid}/ns/net`, "r");
    opened.push(net);
    const user = openSync(`/proc/${bwrapPid}/ns/user`, "r");
    opened.push(user);
    const netIno = fstatSync(net).ino;
    if (netIno !== statSync(`/proc/${bwrapPid}/ns/net`).ino) throw new Error("its pid now belongs to another process");
    if (netIno === statSync("/proc/self/ns/net").ino || fstatSync(user).ino === statSync("/proc/self/ns/user").ino) {
      throw new Error("it is in the worker's own namespaces");
    }
    return { net, user };
  } catch (error) {
    for (const fd of opened) closeSync(fd);
    return `the sandbox's namespaces could not be checked (${(error as Error).message})`;
  }
}

/**
 * Starts slirp4netns on the sandbox whose init is `sandbox.pid` (blocked
 * before the command) under bwrap `sandbox.bwrapPid`, after checking its
 * namespaces. fd 3 is its ready fd, fd 4 its exit fd, fds 5 and 6 the
 * network and user namespaces. Its environment is empty: it needs nothing of
 * the worker's.
 */
export function connectNetwork(slirp4netns: string, sandbox: { pid: number; bwrapPid: number }): NetworkLink {
  const namespaces = openNamespaces(sandbox.pid, sandbox.bwrapPid);
  if (typeof namespaces === "string")
    return { ready: Promise.resolve({ ok: false, reason: namespaces }), lost: new Promise(() => {}), stop: () => {} };
  let started: StartedChild;
  try {
    const args = [
      ...slirpArguments,
      "--ready-fd=3",
      "--exit-fd=4",
      "--netns-type=path",
      "--userns-path=/proc/self/fd/6",
      "/proc/self/fd/5",
      sandboxTapName,
    ];
    started = startChild(slirp4netns, args, {
      stdio: ["ignore", "ignore", "pipe", "pipe", "pipe", namespaces.net, namespaces.user],
      env: {},
    });
  } finally {
    // slirp4netns holds its own copies now.
    closeSync(namespaces.net);
    closeSync(namespaces.user);
  }
  const { child } = started;
  if (!child || !started.stdio) {
    // Not started (descriptors or processes exhausted): the command must not run without its network.
    const why = started.closed.then((end) => ({
      ok: false as const,
      reason: `slirp4netns could not be started (${end.kind === "not_started" ? end.error.message : "no stdio"})`,
    }));
    return { ready: why, lost: new Promise(() => {}), stop: () => {} };
  }
  let stderr = "";
  const withOutput = (reason: string) => (stderr.trim() ? `${reason}: ${stderr.trim().slice(-800)}` : reason);
  let isReady = false;
  let stopped = false;
  let settleReady!: (outcome: { ok: true } | { ok: false; reason: string }) => void;
  const ready = new Promise<{ ok: true } | { ok: false; reason: string }>((resolve) => (settleReady = resolve));
  let settleLost!: (reason: string) => void;
  const lost = new Promise<string>((resolve) => (settleLost = resolve));
  let readySettled = false;
  const failed = (reason: string) => {
    if (readySettled) return;
    readySettled = true;
    clearTimeout(timer);
    settleReady({ ok: false, reason: withOutput(reason) });
  };
  const timer = setTimeout(() => {
    failed(`slirp4netns did not configure the network within ${readyTimeoutMs / 1000} s`);
    stop();
  }, readyTimeoutMs);
  timer.unref();

  const exitFd = started.stdio[4] as Writable | null;
  exitFd?.on("error", () => {});
  const readyFd = started.stdio[3] as Readable | null;
  readyFd?.on("error", () => {});
  readyFd?.on("data", (chunk: Buffer) => {
    if (readySettled || !chunk.includes("1")) return;
    readySettled = true;
    isReady = true;
    clearTimeout(timer);
    settleReady({ ok: true });
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString("utf8")).slice(-2000);
  });

  let done = false;
  child.on("error", (error) => {
    done = true;
    failed(`slirp4netns could not be started (${error.message})`);
  });
  child.on("exit", (code, signal) => {
    done = true;
    // stderr is a pipe that may still hold the reason: read it to its end first.
    const report = () => {
      const how = `slirp4netns exited (${signal ?? `status ${code}`})`;
      if (!isReady) return failed(`${how} before the network was up`);
      if (!stopped) settleLost(withOutput(`${how} while the command ran`));
    };
    if (child.stderr && !child.stderr.readableEnded) child.stderr.once("close", report);
    else report();
  });

  const stop = () => {
    stopped = true;
    failed("stopped");
    exitFd?.destroy();
    if (!done) child.kill("SIGKILL");
  };
  return { ready, lost, stop };
}
