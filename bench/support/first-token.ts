import { performance } from "node:perf_hooks";
import type { SessionId } from "../../src/ids.js";
import type { Services } from "../../src/services.js";
import { benchMarker, type FakeModelServer } from "./fake-model-server.js";
import { distribution, round } from "./stats.js";

/**
 * Time to first token: from a run's POST, over real HTTP to the API in the
 * benchmark process, to its first model request arriving at the fake model server
 * (fake-model-server.ts), through a worker process and its provider client. The commit of the
 * accepted run lies between the POST's sending and its answer, so both are kept: `answered →
 * request` is the lower bound of commit → request, `sent → request` the upper.
 */
export interface FirstTokenSample {
  sentAt: number;
  answeredAt: number;
  requestAt: number;
  /** The model request came on a connection the worker had already used (keep-alive). */
  reusedConnection: boolean;
}

interface Call {
  status: number;
  body: unknown;
}

export class FirstTokenDriver {
  private counter = 0;

  private constructor(
    private readonly apiUrl: string,
    private readonly key: string,
    private readonly projectId: string,
    private readonly profile: string,
    private readonly model: FakeModelServer,
    private readonly services: Services,
  ) {}

  /** A tenant and a project of its own; its sessions use `profile`, the fake model server's. */
  static async create(
    options: { apiUrl: string; adminToken: string; profile: string; model: FakeModelServer },
    services: Services,
  ): Promise<FirstTokenDriver> {
    const tenant = await post(options.apiUrl, options.adminToken, "/v1/tenants", { name: "bench-first-token" }, 201);
    const key = (tenant as { apiKey: string }).apiKey;
    const project = await post(options.apiUrl, key, "/v1/projects", { name: "first-token" }, 201);
    return new FirstTokenDriver(options.apiUrl, key, (project as { id: string }).id, options.profile, options.model, services);
  }

  /** New sessions, outside any measurement. */
  async createSessions(count: number): Promise<SessionId[]> {
    const ids: SessionId[] = [];
    for (let i = 0; i < count; i++) {
      const session = await post(this.apiUrl, this.key, "/v1/sessions", { projectId: this.projectId, providerProfile: this.profile }, 201);
      ids.push((session as { id: SessionId }).id);
    }
    return ids;
  }

  /**
   * Posts one run to each session at once (the POSTs leave together), and waits until each run's
   * first model request has arrived and the run has ended.
   */
  async startAll(sessionIds: readonly SessionId[], timeoutMs: number): Promise<FirstTokenSample[]> {
    const ends = await Promise.all(sessionIds.map((sessionId) => this.runEnd(sessionId)));
    try {
      const samples = sessionIds.map(async (sessionId, i) => {
        const marker = `${process.pid}-${this.counter++}`;
        const arrival = this.model.arrivalOf(marker);
        const sentAt = performance.now();
        const response = await fetch(`${this.apiUrl}/v1/sessions/${sessionId}/runs`, {
          method: "POST",
          headers: { authorization: `Bearer ${this.key}`, "content-type": "application/json" },
          body: JSON.stringify({ input: `Say done. ${benchMarker(marker)}` }),
        });
        const answeredAt = performance.now();
        const text = await response.text();
        if (response.status !== 202) throw new Error(`run creation answered ${response.status}: ${text}`);
        const [request, status] = await withTimeout(
          Promise.all([arrival, ends[i]?.ended]),
          timeoutMs,
          `run of session ${sessionId} did not reach its model and end within ${timeoutMs} ms`,
        );
        if (status !== "completed") throw new Error(`run of session ${sessionId} ended ${status}`);
        return { sentAt, answeredAt, requestAt: request.at, reusedConnection: request.reusedConnection } satisfies FirstTokenSample;
      });
      return await Promise.all(samples);
    } finally {
      for (const end of ends) end.stop();
    }
  }

  private async runEnd(sessionId: SessionId): Promise<{ ended: Promise<string>; stop(): void }> {
    let resolve: (status: string) => void = () => {};
    const ended = new Promise<string>((done) => {
      resolve = done;
    });
    const stop = await this.services.bus.subscribe(sessionId, (event) => {
      if (event.data.type === "run_end") resolve(event.data.status);
    });
    return { ended, stop };
  }
}

async function post(apiUrl: string, key: string, route: string, body: unknown, expected: number): Promise<unknown> {
  const response = await fetch(`${apiUrl}${route}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const call: Call = { status: response.status, body: await response.json() };
  if (call.status !== expected) throw new Error(`POST ${route} answered ${call.status}: ${JSON.stringify(call.body)}`);
  return call.body;
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The figures of a set of samples, ms. */
export interface FirstTokenFigures {
  samples: number;
  /** POST answered → first model request: the lower bound of commit → request. */
  answeredToRequest: { p50: number; p99: number };
  /** POST sent → first model request: the upper bound. */
  sentToRequest: { p50: number; p99: number };
  /** POST sent → answered. */
  postAnswered: { p50: number; p99: number };
  /** Model requests that came on a connection already open. */
  reusedConnections: number;
}

const p50p99 = (values: readonly number[]) => {
  const d = distribution(values);
  return { p50: round(d.p50), p99: round(d.p99) };
};

export function firstTokenFigures(samples: readonly FirstTokenSample[]): FirstTokenFigures {
  return {
    samples: samples.length,
    answeredToRequest: p50p99(samples.map((sample) => sample.requestAt - sample.answeredAt)),
    sentToRequest: p50p99(samples.map((sample) => sample.requestAt - sample.sentAt)),
    postAnswered: p50p99(samples.map((sample) => sample.answeredAt - sample.sentAt)),
    reusedConnections: samples.filter((sample) => sample.reusedConnection).length,
  };
}

/** The floor's figures: one bare queue hop, enqueue → job start, ms. */
export function hopFigures(delays: readonly number[]): { samples: number; p50: number; p99: number } {
  return { samples: delays.length, ...p50p99(delays) };
}
