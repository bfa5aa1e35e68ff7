import type { projects } from "../../db/schema.js";
import { notFound } from "../../errors.js";
import { type Id, type IdPrefix, parseId, type TenantId } from "../../ids.js";
import type { SessionRow } from "../../store/sessions.js";
import type { Store } from "../../store/store.js";

/**
 * A path's id as the kind of id the route names, or 404 `what`: an id of another kind, like an
 * unknown one or another tenant's, is indistinguishable from a missing one (D8).
 */
export function idOf<P extends IdPrefix>(prefix: P, raw: string, what: string): Id<P> {
  const id = parseId(prefix, raw);
  if (id === null) throw notFound(what);
  return id;
}

/** A session of this tenant, or 404: another tenant's id is indistinguishable from a missing one (D8). */
export async function findSession(store: Pick<Store, "sessions">, tenantId: TenantId, id: string): Promise<SessionRow> {
  const session = await store.sessions.sessionOfTenant(tenantId, idOf("ses", id, "session"));
  if (!session) throw notFound("session");
  return session;
}

/** A project of this tenant, or 404 (D8); a deleted project is gone. */
export async function findProject(store: Pick<Store, "projects">, tenantId: TenantId, id: string): Promise<typeof projects.$inferSelect> {
  const project = await store.projects.findOwnedProject(tenantId, idOf("prj", id, "project"));
  if (!project) throw notFound("project");
  return project;
}
