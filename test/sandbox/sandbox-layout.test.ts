import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bwrapArguments, type SandboxLayout } from "../../src/sandbox/mount-plan.js";
import { loadConfig } from "../../src/config.js";
import { sandboxFromConfig } from "../../src/sandbox/sandbox-from-config.js";
import { createSandbox, type SandboxRunner } from "../../src/sandbox/sandbox-runner.js";
import { sandboxResolvConf } from "../../src/sandbox/sandbox-network.js";
import { defaultProcessLimits } from "../../src/core/process-limits.js";
import { bashTool } from "../../src/tools/builtin/bash-tool.js";
import type { Tool, ToolResult } from "../../src/tools/tool.js";
import { repoRoot } from "../helpers/test-env.js";
import { readyForTools, testIdentity, toolContext, toolPath } from "../helpers/tool-context.js";
let base: string;

beforeAll(async () => {
  base = await realpath(await mkdtemp(path.join(tmpdir(), "foya-sbx-layout-")));
});
afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

const text = (result: ToolResult) => (result.content[0]?.type === "text" ? result.content[0].text : "");
const runIn = (runner: SandboxRunner, workspaceDir: string, command: string): Promise<ToolResult> =>
  (bashTool as unknown as Tool<{ command: string }>).run(
    toolContext({ workspaceDir, runner, exposedTools: ["bash"] }),
    { command },
    { callId: "c", name: "bash", argumentsRaw: "" },
  );
/** What every plan asks besides the command and the workspace: confined, as the test's tool uid, default limits. */
const planned = { view: "confined" as const, identity: testIdentity, limits: defaultProcessLimits };

describe("sandbox layout", () => {
  it("S3: the service's folder is hidden even inside a shown tree, with the workspaces folder inside it (the default .data/workspaces)", async () => {
    // A service installed under a tree the sandbox shows (like /opt/foya), its workspaces inside it.
    const shown = path.join(base, "opt");
    const service = path.join(shown, "foya");
    const workspaces = path.join(service, ".data", "workspaces");
    const workspace = path.join(workspaces, "tenant", "project");
    await mkdir(workspace, { recursive: true });
    await mkdir(path.join(workspaces, "other", "project"), { recursive: true });
    await writeFile(path.join(service, "package.json"), '{"name":"foya"}\n');
    await writeFile(path.join(service, ".env"), "DATABASE_URL=postgres://secret\n");
    await writeFile(path.join(shown, "tool.txt"), "a shared tool\n");
    await writeFile(path.join(shown, "extra-secret.key"), "key\n");
    const runner = createSandbox({
      bwrapPath: "bwrap",
      searchPath: toolPath,
      workspacesDir: workspaces,
      servicePaths: [service],
      readOnlyPaths: [shown],
      hiddenPaths: [path.join(shown, "extra-secret.key")],
    });

    const ok = await runIn(runner, workspace, `cat ${shown}/tool.txt && echo work > done.txt && ls -A ${service}`);
    expect(text(ok)).toMatch(/^a shared tool\n\.data\n\n\[exit code 0\]$/);
    expect(await readFile(path.join(workspace, "done.txt"), "utf8")).toBe("work\n");
    for (const attempt of [
      `cat ${service}/package.json`,
      `cat ${service}/.env`,
      `ls ${workspaces}/other`,
      `cat ${shown}/extra-secret.key`,
      `echo x > ${shown}/new.txt`,
      `echo x > ${service}/new.txt`,
      `mkdir ${workspaces}/third`,
    ]) {
      const result = await runIn(runner, workspace, attempt);
      expect(result, `${attempt}\n${text(result)}`).toMatchObject({ isError: true, errorCode: "exit_code" });
    }
    expect(existsSync(path.join(shown, "new.txt"))).toBe(false);
    expect(existsSync(path.join(service, "new.txt"))).toBe(false);
    expect(existsSync(path.join(workspaces, "third"))).toBe(false);
  });

  it("S3: when .git/hooks is a symlink (which could be re-pointed), all of .git is read-only", async () => {
    const workspaces = path.join(base, "ws-links");
    const workspace = path.join(workspaces, "t", "p");
    await mkdir(path.join(workspace, ".git", "real-hooks"), { recursive: true });
    await symlink("real-hooks", path.join(workspace, ".git", "hooks"));
    await writeFile(path.join(workspace, ".git", "config"), "[core]\n");
    const runner = createSandbox({ bwrapPath: "bwrap", searchPath: toolPath, workspacesDir: workspaces, servicePaths: [repoRoot] });
    for (const attempt of ["echo evil > .git/hooks/pre-commit", "ln -sfn /tmp .git/hooks", "echo x > .git/HEAD"]) {
      expect(await runIn(runner, workspace, attempt), attempt).toMatchObject({ isError: true, errorCode: "exit_code" });
    }
    expect(existsSync(path.join(workspace, ".git", "real-hooks", "pre-commit"))).toBe(false);
    expect(await runIn(runner, workspace, "echo fine > notes.txt")).toMatchObject({
      content: [{ text: expect.stringMatching(/\[exit code 0\]$/) }],
    });
  });

  it("S11: a .git symlink leading into the workspace makes what it leads to read-only; one leading nowhere or out of the workspace blocks nothing", async () => {
    const workspaces = path.join(base, "ws-git-links");
    const workspace = path.join(workspaces, "t", "p");
    for (const folder of ["a", "b", "c", "gitdir"]) await mkdir(path.join(workspace, folder), { recursive: true });
    await symlink("../gitdir", path.join(workspace, "a", ".git"));
    await symlink("/nonexistent", path.join(workspace, "b", ".git"));
    await symlink("/usr", path.join(workspace, "c", ".git"));
    await readyForTools(workspace);
    const runner = createSandbox({ bwrapPath: "bwrap", searchPath: toolPath, workspacesDir: workspaces, servicePaths: [repoRoot] });
    const result = await runIn(runner, workspace, "touch gitdir/hooks 2>&1; ls -d b/.git c/.git/bin && echo fine");
    expect(text(result)).toMatch(/^touch: cannot touch 'gitdir\/hooks': Read-only file system\nb\/.git\nc\/.git\/bin\nfine\n/);
  });

  it("S3: a workspace that would expose the workspaces folder or the system trees is refused", async () => {
    const workspaces = path.join(base, "ws-refuse");
    await mkdir(path.join(workspaces, "t", "p"), { recursive: true });
    const runner = createSandbox({ bwrapPath: "bwrap", searchPath: toolPath, workspacesDir: workspaces, servicePaths: [repoRoot] });
    for (const workspaceDir of [workspaces, base, "/"]) {
      const plan = await runner.plan({ command: "true", workspaceDir, network: false, ...planned });
      expect(plan, workspaceDir).toMatchObject({
        ok: false,
        message: expect.stringContaining("a workspace must be a project's own folder"),
      });
    }
    expect(await runner.plan({ command: "true", workspaceDir: path.join(base, "missing"), network: false, ...planned })).toMatchObject({
      ok: false,
      message: expect.stringContaining("is not a directory"),
    });
  });

  it("S3: hiding a path that holds the system trees is a configuration error", () => {
    for (const hidden of ["/", "/usr", "/etc"]) {
      expect(() =>
        createSandbox({ bwrapPath: "bwrap", searchPath: toolPath, workspacesDir: base, servicePaths: [], hiddenPaths: [hidden] }),
      ).toThrow(/would hide/);
    }
  });

  it("S3: the bwrap command line: whitelist, namespaces, no capabilities, the seccomp filter, covers only where needed, always its own network namespace, no path inside the workspace but its root", () => {
    const layout: SandboxLayout = {
      view: "confined",
      readOnly: [{ path: "/usr" }, { path: "/bin", symlinkTo: "/usr/bin" }, { path: "/etc" }],
      hidden: [
        { path: "/etc/shadow", isDirectory: false },
        { path: "/etc/ssh", isDirectory: true },
        { path: "/root", isDirectory: true }, // not shown anyway: no cover
        { path: "/srv/foya", isDirectory: true }, // holds the workspace: covered
        { path: "/srv/foya/.data/workspaces", isDirectory: true },
      ],
      workspace: "/srv/foya/.data/workspaces/t/p",
      tempBytes: 8 * 1024,
      disableUserNamespaces: true,
    };
    const args = bwrapArguments(layout, { network: null, statusFd: 3, seccompFd: 6 });
    const line = args.join(" ");
    for (const flag of [
      "--unshare-user --uid 0 --gid 0 --disable-userns",
      "--unshare-pid",
      "--unshare-ipc",
      "--unshare-uts",
      "--unshare-cgroup-try",
      "--unshare-net",
      "--die-with-parent",
      "--new-session",
      "--cap-drop ALL",
      "--json-status-fd 3",
      "--seccomp 6",
    ]) {
      expect(line).toContain(flag);
    }
    // bwrap resolves what it binds on the host: the workspace's root is the one path inside it bwrap sees (git-guard.ts).
    expect(args.filter((arg) => arg.startsWith("/srv/foya/.data/workspaces/t/p"))).toEqual([
      "/srv/foya/.data/workspaces/t/p",
      "/srv/foya/.data/workspaces/t/p",
      "/srv/foya/.data/workspaces/t/p",
    ]);
    // The temporary space adds up to the call's share: an eighth each for /var/tmp and /dev/shm, the rest for /tmp.
    for (const tmpfs of ["--size 6144 --tmpfs /tmp ", "--size 1024 --tmpfs /var/tmp ", "--size 1024 --tmpfs /dev/shm "])
      expect(line).toContain(tmpfs);
    expect(line).not.toContain("--ro-bind / /");
    expect(line).not.toContain("/root");
    const order = [
      "--ro-bind /usr /usr",
      "--ro-bind /dev/null /etc/shadow",
      "--tmpfs /srv/foya ",
      "--tmpfs /srv/foya/.data/workspaces ",
      "--bind /srv/foya/.data/workspaces/t/p /srv/foya/.data/workspaces/t/p",
      "--remount-ro /srv/foya ",
      "--remount-ro / --chdir /srv/foya/.data/workspaces/t/p --",
    ].map((part) => line.indexOf(part));
    expect(order.every((at) => at >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(line).toContain("--symlink /usr/bin /bin");
    expect(args.at(-1)).toBe("--");
    expect(line).not.toContain("--block-fd");
    expect(line).not.toContain("--ro-bind-data");
    // With the network bwrap runs in a namespace made for slirp4netns (see the runner below), the command waits
    // on the block fd, and the generated resolv.conf is bound once /etc is there.
    const networked = bwrapArguments(layout, {
      network: { blockFd: 4, resolvConf: { fd: 5, path: "/etc/resolv.conf" } },
      statusFd: 3,
      seccompFd: 6,
    }).join(" ");
    expect(networked).not.toContain("--unshare-net");
    for (const flag of [
      "--unshare-user --uid 0 --gid 0 --disable-userns",
      "--unshare-pid",
      "--cap-drop ALL",
      "--json-status-fd 3 --seccomp 6 --block-fd 4",
    ])
      expect(networked).toContain(flag);
    expect(networked.indexOf("--ro-bind-data 5 /etc/resolv.conf")).toBeGreaterThan(networked.indexOf("--ro-bind /etc /etc"));
    expect(networked.indexOf("--ro-bind-data 5 /etc/resolv.conf")).toBeLessThan(networked.indexOf("--remount-ro / "));
    expect(bwrapArguments(layout, { network: { blockFd: 4, resolvConf: null }, statusFd: 3, seccompFd: 6 }).join(" ")).not.toContain(
      "--ro-bind-data",
    );
  });

  it("S3: the runner never gives a sandbox the host's network namespace: bwrap makes an empty one, or unshare one for slirp4netns", async () => {
    const workspace = path.join(base, "ws-net", "t", "p");
    await mkdir(workspace, { recursive: true });
    await readyForTools(workspace);
    const runner = createSandbox({
      bwrapPath: "bwrap",
      searchPath: toolPath,
      workspacesDir: path.join(base, "ws-net"),
      servicePaths: [repoRoot],
    });
    const plain = await runner.plan({ command: "true", workspaceDir: workspace, network: false, ...planned });
    if (!plain.ok) throw new Error(plain.message);
    expect(plain.network).toBeNull();
    const bwrapAt = plain.args.findIndex((arg) => arg.endsWith("/bwrap"));
    expect(bwrapAt).toBeGreaterThan(0);
    expect(plain.args).toContain("--unshare-net");
    const networked = await runner.plan({ command: "true", workspaceDir: workspace, network: true, ...planned });
    if (!networked.ok) throw new Error(networked.message);
    expect(networked.network).toMatchObject({ slirp4netns: expect.stringMatching(/\/slirp4netns$/), blockFd: 4 });
    const unshareAt = networked.args.findIndex((arg) => arg.endsWith("/unshare"));
    expect(networked.args.slice(unshareAt + 1, unshareAt + 6)).toEqual(["--user", "--map-root-user", "--net", "--", plain.args[bwrapAt]]);
    expect(networked.args).toContain("--block-fd");
    expect(networked.args).not.toContain("--unshare-net");
    plain.release();
    networked.release();
  });

  it("S3: the sandbox's programs come from the system's folders, never from the service's PATH (node_modules/.bin under npm start)", async () => {
    const workspace = path.join(base, "ws-path", "t", "p");
    await mkdir(workspace, { recursive: true });
    await readyForTools(workspace);
    const planted = path.join(base, "planted-bin");
    await mkdir(planted, { recursive: true });
    for (const name of ["bwrap", "setpriv", "prlimit", "unshare", "slirp4netns"])
      await writeFile(path.join(planted, name), "#!/bin/sh\necho planted\n", { mode: 0o755 });
    const runner = sandboxFromConfig(loadConfig({ FOYA_WORKSPACES_DIR: path.join(base, "ws-path"), PATH: `${planted}:${toolPath}` }));
    const plan = await runner.plan({ command: "true", workspaceDir: workspace, network: true, ...planned });
    if (!plan.ok) throw new Error(plan.message);
    expect([plan.file, ...plan.args, plan.network?.slirp4netns].join(" ")).not.toContain(planted);
    plan.release();
  });

  it("S7: a root service steps down: setpriv to the tenant's uid without groups or new privileges, then prlimit sets the call's limits", async () => {
    const workspace = path.join(base, "ws-identity", "t", "p");
    await mkdir(workspace, { recursive: true });
    await readyForTools(workspace);
    const runner = createSandbox({
      bwrapPath: "bwrap",
      searchPath: toolPath,
      workspacesDir: path.join(base, "ws-identity"),
      servicePaths: [repoRoot],
    });
    const limits = {
      ...defaultProcessLimits,
      memoryBytes: 1 << 30,
      processes: 64,
      cpuSeconds: 30,
      fileSizeBytes: 1 << 20,
      wallSeconds: 60,
      tmpBytes: 1 << 25,
    };
    const plan = await runner.plan({
      command: "true",
      workspaceDir: workspace,
      network: false,
      view: "confined",
      identity: testIdentity,
      limits,
    });
    if (!plan.ok) throw new Error(plan.message);
    const line = [plan.file, ...plan.args].join(" ");
    if (process.getuid?.() === 0) {
      expect(plan.file).toMatch(/\/setpriv$/);
      expect(line).toContain(
        `--reuid=${testIdentity.uid} --regid=${testIdentity.gid} --clear-groups --no-new-privs --pdeathsig SIGKILL --`,
      );
    }
    expect(line).toMatch(/\/prlimit --as=1073741824 --nproc=64 --fsize=1048576 --core=0 --cpu=30:31 -- \S+\/bwrap /);
    // 32 MiB of temporary space: 4 MiB each for /var/tmp and /dev/shm, the rest for /tmp.
    expect(line).toContain(`--size ${24 << 20} --tmpfs /tmp`);
    plan.release();
    // Root may never be asked for; a workspace that is not the tenant's is refused, never used as it is.
    expect(
      await runner.plan({
        command: "true",
        workspaceDir: workspace,
        network: false,
        view: "confined",
        identity: { uid: 0, gid: 0 },
        limits,
      }),
    ).toMatchObject({ ok: false, message: expect.stringContaining("may not run as root") });
    if (process.getuid?.() === 0) {
      const other = { uid: testIdentity.uid + 1, gid: testIdentity.gid + 1 };
      expect(
        await runner.plan({ command: "true", workspaceDir: workspace, network: false, view: "confined", identity: other, limits }),
      ).toMatchObject({ ok: false, message: expect.stringContaining(`not to the tenant's tool uid ${other.uid}`) });
    }
  });

  it("S3: a network-granted sandbox's resolv.conf names slirp4netns's DNS, or the host's upstream servers when the host's resolver is on loopback", () => {
    expect(sandboxResolvConf("nameserver 10.255.255.53\n", undefined)).toBe("nameserver 10.0.2.3\n");
    expect(sandboxResolvConf("# generated\nsearch corp.example\nnameserver 192.0.2.53\noptions edns0\n", undefined)).toBe(
      "search corp.example\noptions edns0\nnameserver 10.0.2.3\n",
    );
    // systemd-resolved: the stub on 127.0.0.53, the real servers in /run/systemd/resolve/resolv.conf.
    expect(
      sandboxResolvConf(
        "nameserver 127.0.0.53\noptions edns0 trust-ad\nsearch lan\n",
        "nameserver 192.0.2.1\nnameserver 2001:db8::1\nnameserver 198.51.100.1\n",
      ),
    ).toBe("options edns0 trust-ad\nsearch lan\nnameserver 192.0.2.1\nnameserver 198.51.100.1\n");
    // A local dnsmasq first, a real server after it.
    expect(sandboxResolvConf("nameserver 127.0.0.1\nnameserver 192.0.2.7\n", undefined)).toBe("nameserver 192.0.2.7\n");
    // Nothing usable: slirp4netns's address anyway (names then do not resolve; addresses still work).
    expect(sandboxResolvConf("nameserver 127.0.0.53\n", undefined)).toBe("nameserver 10.0.2.3\n");
    expect(sandboxResolvConf(undefined, undefined)).toBe("nameserver 10.0.2.3\n");
  });
});
