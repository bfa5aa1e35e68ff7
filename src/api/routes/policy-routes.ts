import { createRoute, z } from "@hono/zod-openapi";
import type { ApprovalPolicy } from "../../core/policy.js";
import { notFound } from "../../errors.js";
import { parseRule } from "../../gateway/rules.js";
import type { ApiServices, App } from "../app-env.js";
import { errorResponses, IdParam } from "../schemas.js";
import { setProjectPolicy } from "../../store/owned-project.js";
import { readTenantPolicy, setTenantPolicy } from "../../store/tenants.js";
import { findProject } from "./find-owned.js";

const RuleList = z
  .array(z.string().min(1).max(1000, "a rule may have at most 1000 characters"))
  .max(1000)
  .superRefine((rules, ctx) => {
    for (const [index, rule] of rules.entries()) {
      const parsed = parseRule(rule);
      // Most parse errors already start with the rule, quoted.
      if (!parsed.ok)
        ctx.addIssue({
          code: "custom",
          path: [index],
          message: `invalid rule ${parsed.error.startsWith('"') ? parsed.error : `"${rule}": ${parsed.error}`}`,
        });
    }
  });

const PolicySchema = z
  .object({
    rules: z
      .object({ allow: RuleList.optional(), ask: RuleList.optional(), deny: RuleList.optional() })
      .strict()
      .optional()
      .openapi({
        description:
          "Checked deny, then ask, then allow; first match wins. E.g. `bash(npm test*)`, `write(src/**)`, `read(/etc/**)`, `web_fetch`. " +
          "Path patterns are bash globstar globs of at most 256 characters (64 brace alternatives, 512 characters once expanded); a pattern for read, write, edit, delete or list that is not one is refused.",
      }),
    approvalTtlSeconds: z
      .number()
      .int()
      .min(1)
      .max(30 * 86_400)
      .optional()
      .openapi({ description: "How long an approval waits before it expires and counts as denied." }),
    network: z.boolean().optional().openapi({ description: "Sandboxed processes may use the network without asking." }),
  })
  .strict()
  .openapi("ApprovalPolicy");

const getTenantPolicy = createRoute({
  method: "get",
  path: "/v1/policy",
  summary: "The tenant's approval policy, applied to every project",
  responses: { 200: { content: { "application/json": { schema: PolicySchema } }, description: "The policy" }, ...errorResponses },
});
const putTenantPolicy = createRoute({
  method: "put",
  path: "/v1/policy",
  summary: "Replace the tenant's approval policy",
  request: { body: { content: { "application/json": { schema: PolicySchema } }, required: true } },
  responses: { 200: { content: { "application/json": { schema: PolicySchema } }, description: "The policy" }, ...errorResponses },
});
const getProjectPolicy = createRoute({
  method: "get",
  path: "/v1/projects/{id}/policy",
  summary: "A project's approval policy; combined with the tenant's",
  request: { params: IdParam },
  responses: { 200: { content: { "application/json": { schema: PolicySchema } }, description: "The policy" }, ...errorResponses },
});
const putProjectPolicy = createRoute({
  method: "put",
  path: "/v1/projects/{id}/policy",
  summary: "Replace a project's approval policy",
  request: { params: IdParam, body: { content: { "application/json": { schema: PolicySchema } }, required: true } },
  responses: { 200: { content: { "application/json": { schema: PolicySchema } }, description: "The policy" }, ...errorResponses },
});

export function registerPolicyRoutes(app: App, services: ApiServices): void {
  const { db } = services.db;
  app.openapi(getTenantPolicy, async (c) => {
    const row = await readTenantPolicy(db, c.get("tenantId"));
    if (!row) throw notFound("tenant");
    return c.json(row.policy, 200);
  });
  app.openapi(putTenantPolicy, async (c) => {
    const policy: ApprovalPolicy = c.req.valid("json");
    await setTenantPolicy(db, c.get("tenantId"), policy);
    return c.json(policy, 200);
  });
  app.openapi(getProjectPolicy, async (c) => {
    const project = await findProject(db, c.get("tenantId"), c.req.valid("param").id);
    return c.json(project.policy, 200);
  });
  app.openapi(putProjectPolicy, async (c) => {
    const policy: ApprovalPolicy = c.req.valid("json");
    const row = await setProjectPolicy(db, c.get("tenantId"), c.req.valid("param").id, policy);
    if (!row) throw notFound("project");
    return c.json(policy, 200);
  });
}
