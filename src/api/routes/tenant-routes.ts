import { createRoute } from "@hono/zod-openapi";
import { apiKeys, tenants } from "../../db/schema.js";
import { newId } from "../../ids.js";
import type { ApiServices, App } from "../app-env.js";
import { generateApiKey, requireAdminToken } from "../auth.js";
import { errorResponses, TenantCreatedSchema, TenantCreateSchema } from "../schemas.js";

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
  },
});

export function registerTenantRoutes(app: App, services: ApiServices): void {
  app.use("/v1/tenants", requireAdminToken(services.config.adminToken));
  app.openapi(createTenant, async (c) => {
    const { name } = c.req.valid("json");
    const key = generateApiKey();
    const tenant = await services.db.db.transaction(async (tx) => {
      const [row] = await tx.insert(tenants).values({ id: newId("ten"), name }).returning();
      if (!row) throw new Error("tenant insert returned nothing");
      await tx.insert(apiKeys).values({ id: newId("key"), tenantId: row.id, keyHash: key.hash, prefix: key.prefix, name: "initial" });
      return row;
    });
    return c.json({ tenant: { id: tenant.id, name: tenant.name, createdAt: tenant.createdAt.toISOString() }, apiKey: key.key }, 201);
  });
}
