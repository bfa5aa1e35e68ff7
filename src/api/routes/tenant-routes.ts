import { createRoute } from "@hono/zod-openapi";
import { notFound } from "../../errors.js";
import type { ApiServices, App } from "../app-env.js";
import { generateApiKey, presented } from "../auth.js";
import type { AuthFailureLockout } from "../limits/auth-failure-lockout.js";
import {
  adminDisabledResponse,
  errorResponses,
  IdParam,
  TenantCreatedSchema,
  TenantCreateSchema,
  TenantSchema,
  TenantUpdateSchema,
} from "../schemas.js";
import { serializeTenant } from "../serialize.js";
import { idOf } from "./find-owned.js";

const createTenant = createRoute({
  method: "post",
  path: "/v1/tenants",
  summary: "Create a tenant and its first API key (admin token only)",
  security: [{ adminToken: [] }],
  middleware: [],
  request: { body: { content: { "application/json": { schema: TenantCreateSchema } }, required: true } },
  responses: {
    201: { content: { "application/json": { schema: TenantCreatedSchema } }, description: "Created; the key is shown once" },
    ...errorResponses,
    ...adminDisabledResponse,
  },
});

const getTenant = createRoute({
  method: "get",
  path: "/v1/tenants/{id}",
  summary: "A tenant's operator settings: Full Access grant, process limits, tool uid (admin token only)",
  security: [{ adminToken: [] }],
  request: { params: IdParam },
  responses: {
    200: { content: { "application/json": { schema: TenantSchema } }, description: "The tenant" },
    ...errorResponses,
    ...adminDisabledResponse,
  },
});

const updateTenant = createRoute({
  method: "patch",
  path: "/v1/tenants/{id}",
  summary: "Grant or revoke Full Access, set or clear process limit and quota overrides (admin token only)",
  security: [{ adminToken: [] }],
  request: { params: IdParam, body: { content: { "application/json": { schema: TenantUpdateSchema } }, required: true } },
  responses: {
    200: { content: { "application/json": { schema: TenantSchema } }, description: "The tenant, updated" },
    ...errorResponses,
    ...adminDisabledResponse,
  },
});

/**
 * Behind the admin token, which `createApp` checks on /v1/tenants and below. A key is vouched
 * for as it is issued, so its first request passes an address other clients' failures locked.
 */
export function registerTenantRoutes(app: App, services: ApiServices, lockout: Pick<AuthFailureLockout, "vouch">): void {
  app.openapi(createTenant, async (c) => {
    const { name } = c.req.valid("json");
    const key = generateApiKey();
    const tenant = await services.store.tenants.insertTenantWithKey(name, key);
    lockout.vouch(presented("tenant", key.key));
    return c.json({ tenant: { id: tenant.id, name: tenant.name, createdAt: tenant.createdAt.toISOString() }, apiKey: key.key }, 201);
  });

  app.openapi(getTenant, async (c) => {
    const tenant = await services.store.tenants.findTenant(idOf("ten", c.req.valid("param").id, "tenant"));
    if (!tenant) throw notFound("tenant");
    return c.json(serializeTenant(tenant, services.config), 200);
  });

  app.openapi(updateTenant, async (c) => {
    const { id } = c.req.valid("param");
    const body = c.req.valid("json");
    const tenant = await services.store.tenants.updateTenantSettings(idOf("ten", id, "tenant"), body);
    if (!tenant) throw notFound("tenant");
    return c.json(serializeTenant(tenant, services.config), 200);
  });
}
