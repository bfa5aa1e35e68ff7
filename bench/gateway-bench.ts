/**
 * Approval gateway benchmark (part of `npm run bench`): the cost of judging one
 * tool call (SPEC S2) for a mix of calls, with two policies of 20 rules each,
 * against a baseline every call already pays: `JSON.parse` of its arguments.
 * Pure in-process work, no services needed. Each call is timed on its own for
 * p50/p99 (the timer's own cost is in both columns alike); calls/s comes from
 * untimed loops.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { ApprovalPolicy } from "../src/core/policy.js";
import { judgeCall } from "../src/gateway/judge-call.js";
import { compilePolicy } from "../src/gateway/compiled-policy.js";
import type { JudgeInput } from "../src/gateway/verdict.js";
import type { ApprovalSubject, SideEffect } from "../src/tools/tool.js";
import { distribution, ratio, round } from "./support/stats.js";

const workspaceDir = "/srv/foya/workspaces/ten_1/prj_1";

function policies(): ApprovalPolicy[] {
  const tenant: ApprovalPolicy = {
    network: false,
    rules: {
      deny: ["bash(curl *evil*)", "bash(git push --force*)", "bash(npm publish*)", "read(/etc/shadow)", "write(.env*)", "mcp__billing__*"],
      ask: ["bash(docker *)", "bash(kubectl *)", "write(**/*.pem)", "web_fetch(http://*)", "mcp__github__delete_*"],
      allow: [
        "bash(npm test*)",
        "bash(npm run lint*)",
        "bash(git status*)",
        "bash(git diff*)",
        "bash(git log*)",
        "read(/usr/share/dict/**)",
        "web_fetch(https://docs.example.com/*)",
        "mcp__github__get_*",
        "list",
      ],
    },
  };
  const project: ApprovalPolicy = {
    rules: {
      deny: ["write(secrets/**)", "edit(secrets/**)", "bash(*--no-verify*)", "bash(psql *prod*)"],
      ask: ["bash(make deploy*)", "write(migrations/**)", "bash(terraform *)", "edit(package.json)"],
      allow: [
        "write(src/**)",
        "edit(src/**)",
        "write(test/**)",
        "bash(pnpm vitest*)",
        "bash(ls*)",
        "bash(cat *)",
        "bash(grep *)",
        "bash(rg *)",
        "bash(tsc*)",
        "web_fetch(https://registry.npmjs.org/*)",
        "bash(node scripts/*)",
        "bash(wc *)",
      ],
    },
  };
  return [tenant, project];
}

interface Call {
  kind: string;
  tool: string;
  sideEffect: SideEffect;
  subject: ApprovalSubject;
  /** The call's arguments as the model sent them. */
  argumentsRaw: string;
}

const complexCommand =
  'cd src && grep -rn "TODO" . | sort | uniq -c | head -20 > ../todo.txt; echo "$(git rev-parse HEAD)" && FOO=1 timeout 600 npm test -- --watch=false 2>&1 | tee test.log || { echo failed; exit 1; }';

function callsOf(kind: string, tool: string, sideEffect: SideEffect, subject: ApprovalSubject, args: Record<string, unknown>): Call {
  return { kind, tool, sideEffect, subject, argumentsRaw: JSON.stringify(args) };
}

const calls: Call[] = [
  callsOf(
    "read",
    "read",
    "read",
    { kind: "path", path: "src/gateway/judge-call.ts" },
    { path: "src/gateway/judge-call.ts", offset: 1, limit: 200 },
  ),
  callsOf(
    "write inside",
    "write",
    "write",
    { kind: "path", path: "src/new-file.ts" },
    { path: "src/new-file.ts", content: "export const x = 1;\n".repeat(20) },
  ),
  callsOf("write outside", "write", "write", { kind: "path", path: "../../other/x.ts" }, { path: "../../other/x.ts", content: "x\n" }),
  callsOf("bash simple", "bash", "exec", { kind: "command", command: "npm test" }, { command: "npm test" }),
  callsOf("bash complex", "bash", "exec", { kind: "command", command: complexCommand }, { command: complexCommand, timeoutMs: 600_000 }),
  callsOf(
    "web_fetch",
    "web_fetch",
    "network",
    { kind: "url", url: "https://docs.example.com/guide/intro?lang=en" },
    { url: "https://docs.example.com/guide/intro?lang=en" },
  ),
];

const policyList = policies();
const inputs: JudgeInput[] = calls.map((call) => ({
  mode: "auto",
  tool: { name: call.tool, sideEffect: call.sideEffect },
  subject: call.subject,
  workspaceDir,
  policies: policyList,
}));

let sink = 0; // keeps the work observable, so it is not optimised away
const judge = (index: number) => {
  sink += judgeCall(inputs[index] as JudgeInput).decision.length;
};
const parse = (index: number) => {
  sink += Object.keys(JSON.parse((calls[index] as Call).argumentsRaw) as object).length;
};

// Warm up the JIT and the per-policy rule cache.
for (let round = 0; round < 20_000; round++) {
  for (let index = 0; index < calls.length; index++) {
    judge(index);
    parse(index);
  }
}

function timedMicros(run: (index: number) => void, index: number, samples: number): number[] {
  const values: number[] = new Array(samples);
  for (let sample = 0; sample < samples; sample++) {
    const start = performance.now();
    run(index);
    values[sample] = (performance.now() - start) * 1000;
  }
  return values;
}

function callsPerSecond(run: (index: number) => void, indexes: readonly number[], loops: number): number {
  const start = performance.now();
  for (let loop = 0; loop < loops; loop++) for (const index of indexes) run(index);
  return (loops * indexes.length) / ((performance.now() - start) / 1000);
}

const samples = 50_000;
const rows: Array<Record<string, string | number>> = [];
const report: Record<string, unknown> = {};
const all = calls.map((_, index) => index);
const mixJudge: number[] = [];
const mixParse: number[] = [];

for (const [index, call] of calls.entries()) {
  const judged = timedMicros(judge, index, samples);
  const parsed = timedMicros(parse, index, samples);
  mixJudge.push(...judged);
  mixParse.push(...parsed);
  const j = distribution(judged);
  const p = distribution(parsed);
  const verdict = judgeCall(inputs[index] as JudgeInput).decision;
  const judgeRate = callsPerSecond(judge, [index], 100_000);
  report[call.kind] = {
    verdict,
    judgeP50Micros: round(j.p50),
    judgeP99Micros: round(j.p99),
    judgeCallsPerSecond: Math.round(judgeRate),
    baselineP50Micros: round(p.p50),
    baselineP99Micros: round(p.p99),
    ratioP50: round(ratio(j.p50, p.p50)),
  };
  rows.push({
    call: call.kind,
    verdict,
    "judge p50 µs": round(j.p50),
    "judge p99 µs": round(j.p99),
    "judge calls/s": Math.round(judgeRate),
    "JSON.parse p50 µs": round(p.p50),
    "JSON.parse p99 µs": round(p.p99),
    "ratio p50": round(ratio(j.p50, p.p50)),
  });
}

{
  const j = distribution(mixJudge);
  const p = distribution(mixParse);
  const judgeRate = callsPerSecond(judge, all, 50_000);
  const parseRate = callsPerSecond(parse, all, 50_000);
  report.mix = {
    judgeP50Micros: round(j.p50),
    judgeP99Micros: round(j.p99),
    judgeCallsPerSecond: Math.round(judgeRate),
    baselineP50Micros: round(p.p50),
    baselineP99Micros: round(p.p99),
    baselineCallsPerSecond: Math.round(parseRate),
    ratioP50: round(ratio(j.p50, p.p50)),
    ratioThroughput: round(ratio(parseRate, judgeRate)),
  };
  rows.push({
    call: "mix (equal parts)",
    verdict: "-",
    "judge p50 µs": round(j.p50),
    "judge p99 µs": round(j.p99),
    "judge calls/s": Math.round(judgeRate),
    "JSON.parse p50 µs": round(p.p50),
    "JSON.parse p99 µs": round(p.p99),
    "ratio p50": round(ratio(j.p50, p.p50)),
  });
}

{
  // Compiling a policy happens once per policy object; measured on fresh objects.
  const fresh = Array.from({ length: 2_000 }, () => policies()[1] as ApprovalPolicy);
  const start = performance.now();
  for (const policy of fresh) compilePolicy(policy);
  const compileMicros = ((performance.now() - start) * 1000) / fresh.length;
  report.compilePolicyMicros = round(compileMicros);
  report.rulesPerPolicy = policyList.map((policy) =>
    ["deny", "ask", "allow"].reduce((total, kind) => total + (policy.rules?.[kind as "deny"]?.length ?? 0), 0),
  );
  console.log(
    `Approval gateway: ${samples.toLocaleString("en")} timed calls per kind, mode auto, 2 policies of ${(report.rulesPerPolicy as number[]).join(" and ")} rules`,
  );
  console.table(rows);
  console.log(
    `Compiling a policy of ${(report.rulesPerPolicy as number[])[1]} rules (once per policy object): ${compileMicros.toFixed(1)} µs`,
  );
}

const results = path.join(path.dirname(fileURLToPath(import.meta.url)), "results");
mkdirSync(results, { recursive: true });
writeFileSync(
  path.join(results, "gateway.json"),
  `${JSON.stringify({ date: new Date().toISOString(), samplesPerKind: samples, ...report }, null, 2)}\n`,
);
if (sink === -1) console.log(sink);
