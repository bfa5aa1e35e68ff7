import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import type { MiddlewareHandler } from "hono";
import { routePath } from "hono/route";
import type { Logger } from "../logger.js";
import type { Metrics } from "../observability/metrics.js";
import { otelContext, type Tracing } from "../observability/tracing.js";
import type { AppEnv } from "./app-env.js";

/**
 * One span, one log line and two metrics per request (SPEC X8). The route is the registered
 * pattern (`/v1/sessions/:id/runs`), never the path, so ids stay out of metric labels and a
 * scrape stays bounded. The tenant is known after authentication, so it is read at the end.
 * Streams (SSE) are timed to their response's head, not their whole life.
 */
export function requestTelemetry(services: { logger: Logger; metrics: Metrics; tracing: Tracing }): MiddlewareHandler<AppEnv> {
  const { logger, metrics, tracing } = services;
  // A caller's own trace (W3C traceparent) is joined; without one the request starts a trace.
  const parentOf = (traceparent: string | undefined) => (traceparent ? tracing.contextOf(traceparent) : otelContext.active());
  return async (c, next) => {
    const started = performance.now();
    const method = c.req.method;
    const run = async () => {
      await next();
      return routePath(c, -1);
    };
    let route = "*";
    if (tracing.enabled) {
      await tracing.tracer.startActiveSpan(
        `${method} ${c.req.path}`,
        { kind: SpanKind.SERVER, attributes: { "http.request.method": method } },
        parentOf(c.req.header("traceparent")),
        async (span) => {
          try {
            route = await run();
            span.updateName(`${method} ${route}`);
            span.setAttributes({ "http.route": route, "http.response.status_code": c.res.status });
            const tenantId = c.get("tenantId");
            if (tenantId) span.setAttribute("foya.tenant_id", tenantId);
            if (c.res.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
          } finally {
            span.end();
          }
        },
      );
    } else {
      route = await run();
    }
    const status = c.res.status;
    const seconds = (performance.now() - started) / 1000;
    metrics.apiRequests.inc({ method, route, status: String(status) });
    metrics.apiRequestDuration.observe({ method, route }, seconds);
    const tenantId = c.get("tenantId");
    logger.info(
      {
        requestId: c.get("requestId"),
        method,
        route,
        status,
        durationMs: Math.round(seconds * 1000 * 10) / 10,
        ...(tenantId ? { tenantId } : {}),
      },
      "request",
    );
  };
}
