import { createRoute, z } from "@hono/zod-openapi";
import type { ApprovalPolicy } from "../../core/policy.js";
import { FoyaError, notFound } from "../../errors.js";
import { policyBudget } from "../../gateway/policy-cost.js";
import { policySetOverBudget, preparePolicies } from "../../gateway/compiled-policy.js";
import { parseRule, prepareRules } from "../../gateway/rules.js";
import type { ApiServices, App } from "../app-env.js";
import { errorResponses, IdParam } from "../schemas.js";
import { findProject, idOf } from "./find-owned.js";

const RuleList = z
  .array(z.string().min(1).max(1000, "a rule may have at most 1000 characters"))
  .max(1000)
  .superRefine(async (rules, ctx) => {
    // Compiled in slices that yield (S9): a thousand new rules never hold the API's event loop.
    await prepareRules(rules);
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
          "Path patterns are bash globstar globs of at most 256 characters (64 brace alternatives, 512 characters once expanded); a pattern for read, write, edit, delete or list that is not one is refused. " +
          `Identical rules count once. The tenant's and a project's rules together may cost at most ${policyBudget.toLocaleString("en-US")} steps to match against the longest argument they must judge; more is refused with the cost and the costliest rules.`,
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
  const { store } = services;
  app.openapi(getTenantPolicy, async (c) => {
    const row = await store.tenants.readTenantPolicy(c.get("tenantId"));
    if (!row) throw notFound("tenant");
    return c.json(row.policy, 200);
  });
  app.openapi(putTenantPolicy, async (c) => {
    const policy: ApprovalPolicy = c.req.valid("json");
    const refused = await store.tenants.setTenantPolicyAdmitted(c.get("tenantId"), policy, async (projectPolicies) => {
      await preparePolicies(projectPolicies);
      const alone = policySetOverBudget([policy], "This policy's rules");
      if (alone !== null) return alone;
      for (const projectPolicy of projectPolicies) {
        const together = policySetOverBudget([policy, projectPolicy], "This policy's rules with those of one of the tenant's projects");
        if (together !== null) return together;
      }
      return null;
    });
    if (refused !== null) throw new FoyaError("bad_request", refused);
    return c.json(policy, 200);
  });
  app.openapi(getProjectPolicy, async (c) => {
    const project = await findProject(store, c.get("tenantId"), c.req.valid("param").id);
    return c.json(project.policy, 200);
  });
  app.openapi(putProjectPolicy, async (c) => {
    const policy: ApprovalPolicy = c.req.valid("json");
    const refused = await store.projects.setProjectPolicyAdmitted(
      c.get("tenantId"),
      idOf("prj", c.req.valid("param").id, "project"),
      policy,
      async (tenantPolicy) => {
        await preparePolicies([tenantPolicy]);
        return policySetOverBudget([tenantPolicy, policy], "This policy's rules with the tenant's");
      },
    );
    if (refused === undefined) throw notFound("project");
    if (refused !== null) throw new FoyaError("bad_request", refused);
    return c.json(policy, 200);
  });
}
