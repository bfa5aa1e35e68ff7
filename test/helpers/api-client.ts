import type { App } from "../../src/api/app-env.js";
import type { ProjectId, SessionId, TenantId } from "../../src/ids.js";

export interface ApiResponse<T> {
  status: number;
  body: T;
  headers: Headers;
}

/** Calls the API in-process (`app.request`) or over real HTTP, with a bearer key. */
export class ApiClient {
  private constructor(
    private readonly send: (path: string, init: RequestInit) => Promise<Response>,
    readonly key: string,
    /** The key's tenant, when the client was made for one (`TestEnv.newTenant`). */
    readonly tenantId?: TenantId,
  ) {}

  static forApp(app: App, key: string, tenantId?: TenantId): ApiClient {
    return new ApiClient(async (path, init) => app.request(path, init), key, tenantId);
  }

  static forUrl(baseUrl: string, key: string, tenantId?: TenantId): ApiClient {
    return new ApiClient((path, init) => fetch(`${baseUrl}${path}`, init), key, tenantId);
  }

  /** The same transport with another key (of no known tenant). */
  withKey(key: string): ApiClient {
    return new ApiClient(this.send, key);
  }

  request<T = any>(method: string, path: string, body?: unknown): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.key}` };
    if (body !== undefined) headers["content-type"] = "application/json";
    return this.send(path, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) }).then(async (response) => {
      const text = await response.text();
      return { status: response.status, body: (text ? JSON.parse(text) : null) as T, headers: response.headers };
    });
  }

  get<T = any>(path: string): Promise<ApiResponse<T>> {
    return this.request<T>("GET", path);
  }

  post<T = any>(path: string, body?: unknown): Promise<ApiResponse<T>> {
    return this.request<T>("POST", path, body ?? {});
  }

  patch<T = any>(path: string, body: unknown): Promise<ApiResponse<T>> {
    return this.request<T>("PATCH", path, body);
  }

  delete<T = any>(path: string): Promise<ApiResponse<T>> {
    return this.request<T>("DELETE", path);
  }

  /** Project + session in one go; answers the session id. */
  async newSession(sessionOptions: Record<string, unknown> = {}): Promise<{ projectId: ProjectId; sessionId: SessionId }> {
    const project = await this.post<{ id: ProjectId }>("/v1/projects", { name: "test project" });
    if (project.status !== 201) throw new Error(`project creation failed: ${JSON.stringify(project.body)}`);
    const session = await this.post<{ id: SessionId }>("/v1/sessions", { projectId: project.body.id, ...sessionOptions });
    if (session.status !== 201) throw new Error(`session creation failed: ${JSON.stringify(session.body)}`);
    return { projectId: project.body.id, sessionId: session.body.id };
  }

  async startRun(sessionId: string, input: string | object, ifActive?: string): Promise<ApiResponse<any>> {
    return this.post(`/v1/sessions/${sessionId}/runs`, {
      input: typeof input === "string" ? input : JSON.stringify(input),
      ...(ifActive ? { ifActive } : {}),
    });
  }

  /** Polls the run until it is terminal. */
  async waitForRun(runId: string, timeoutMs = 30_000): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const run = await this.get(`/v1/runs/${runId}`);
      if (["completed", "failed", "cancelled", "interrupted"].includes(run.body?.status)) return run.body;
      if (Date.now() > deadline) throw new Error(`run ${runId} still ${run.body?.status} after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  async events(sessionId: string): Promise<any[]> {
    const all: any[] = [];
    let after = 0;
    for (;;) {
      const page = await this.get(`/v1/sessions/${sessionId}/events?after=${after}&limit=1000`);
      all.push(...page.body.events);
      if (page.body.events.length < 1000) return all;
      after = page.body.next;
    }
  }

  async messages(sessionId: string): Promise<any[]> {
    return (await this.get(`/v1/sessions/${sessionId}/messages`)).body.messages;
  }

  /** The session's tool messages (their content: name, status, isError, parts), in history order. */
  async toolMessages(sessionId: string): Promise<any[]> {
    return (await this.messages(sessionId)).filter((m) => m.role === "tool").map((m) => m.content);
  }
}

/** Scripted-provider input: step N of the turn plays `steps[N]`. */
export function script(steps: unknown[][], options: { chunkDelayMs?: number } = {}): string {
  return JSON.stringify({ script: steps, ...options });
}

export async function waitFor<T>(probe: () => Promise<T | undefined | null | false>, timeoutMs = 20_000, what = "condition"): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** A tool message's parts as one text: text parts as they are, others as `[type]`. */
export function textOf(message: { content: Array<{ type: string; text?: string }> }): string {
  return message.content.map((part) => part.text ?? `[${part.type}]`).join("\n");
}
