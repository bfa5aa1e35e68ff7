import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runStatuses, runTransitions } from "../../src/core/run-status.js";
import { toolCallStatuses, toolCallTransitions } from "../../src/core/tool-call-status.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

let env: TestEnv;
beforeAll(async () => {
  env = await createTestEnv();
  await env.query("insert into tenants (id, name) values ('ten_g', 'g')");
  await env.query("insert into projects (id, tenant_id, name, workspace_path) values ('prj_g', 'ten_g', 'p', '/tmp')");
  await env.query(
    "insert into sessions (id, tenant_id, project_id, approval_mode, provider_profile, run_mode) values ('ses_g', 'ten_g', 'prj_g', 'auto', 'scripted', 'normal')",
  );
  await env.query("insert into runs (id, tenant_id, session_id, status, input) values ('run_g', 'ten_g', 'ses_g', 'running', 'x')");
  await env.query(
    "insert into steps (id, tenant_id, run_id, index, status, tools) values ('stp_g', 'ten_g', 'run_g', 0, 'completed', '[]')",
  );
});
afterAll(async () => env?.close());

async function accepted(sql: string, values: unknown[]): Promise<boolean> {
  try {
    await env.query(sql, values);
    return true;
  } catch {
    return false;
  }
}

describe("status guards in Postgres", () => {
  it("D2: the database accepts exactly the run transitions of the state machine", async () => {
    for (const from of runStatuses) {
      for (const to of runStatuses) {
        if (from === to) continue;
        const id = `run_${from}_${to}`;
        await env.query("insert into runs (id, tenant_id, session_id, status, input) values ($1, 'ten_g', 'ses_g', $2, 'x')", [id, from]);
        const ok = await accepted("update runs set status = $2 where id = $1", [id, to]);
        expect(ok, `${from} -> ${to}`).toBe(runTransitions[from].includes(to));
      }
    }
  });

  it("D2: the database accepts exactly the tool call transitions of the state machine", async () => {
    let index = 0;
    for (const from of toolCallStatuses) {
      for (const to of toolCallStatuses) {
        if (from === to) continue;
        const id = `call_${from}_${to}`;
        await env.query(
          `insert into tool_calls (id, tenant_id, session_id, run_id, step_id, step_index, call_index, call_id, name, arguments_raw, status)
           values ($1, 'ten_g', 'ses_g', 'run_g', 'stp_g', 0, $2, $1, 'read', '{}', $3)`,
          [id, index++, from],
        );
        const ok = await accepted("update tool_calls set status = $2 where id = $1", [id, to]);
        expect(ok, `${from} -> ${to}`).toBe(toolCallTransitions[from].includes(to));
      }
    }
  });
});
