import { loadConfig } from "./src/config.js";
import { sandboxFromConfig } from "./src/sandbox/sandbox-from-config.js";
import { createBashTool } from "./src/tools/builtin/bash-tool.js";
import { toolContext } from "./test/helpers/tool-context.js";
const config = loadConfig({ FOYA_WORKSPACES_DIR: "/tmp/bwx/wsroot", PATH: process.env.PATH });
const bash = createBashTool({ path: "/usr/local/bin:/usr/bin:/bin", sandbox: sandboxFromConfig(config) }) as any;
for (const command of [process.argv[2] ?? "pwd; ls -la /; cat /proc/1/environ | tr '\\0' ' '; ls /work; echo x > .git/config", "kill -9 $$", "exit 3"]) {
  const t = performance.now();
  const r = await bash.run(toolContext({ workspaceDir: "/tmp/bwx/wsroot/ten/prj" }), { command }, { callId: "c", name: "bash", argumentsRaw: "" });
  console.log(performance.now() - t, JSON.stringify(r, null, 1));
}
