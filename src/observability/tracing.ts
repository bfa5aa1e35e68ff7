import { context, ROOT_CONTEXT, SpanStatusCode, trace, type Attributes, type Context, type Span, type Tracer } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, BatchSpanProcessor, type SpanProcessor } from "@opentelemetry/sdk-trace-base";

/**
 * Traces (SPEC X8), off unless configured: an OTLP endpoint (`FOYA_OTLP_TRACES_URL`), or span
 * processors handed in (the tests' in-memory exporter). A trace starts at the API request and
 * travels in job data as a W3C `traceparent` (an id, like everything jobs carry, SPEC D1) into
 * the step job, the model request, the batch job, each tool call and its sandbox spawn.
 *
 * The tracer is this service's own (no global provider is registered); only the async context
 * manager is process-wide, since that is what makes "the active span" follow an await.
 */
export interface Tracing {
  readonly enabled: boolean;
  readonly tracer: Tracer;
  /** Runs `work` inside a new span, a child of the active one; records a thrown error and ends the span. */
  inSpan<T>(name: string, attributes: Attributes, work: (span: Span) => Promise<T>): Promise<T>;
  /** The active context as a `traceparent` value, for job data; undefined when tracing is off or nothing is active. */
  carrier(): string | undefined;
  /** The context a job's `traceparent` names, for its spans to continue the trace. */
  contextOf(traceparent: string | undefined): Context;
  shutdown(): Promise<void>;
}

export interface TracingOptions {
  /** OTLP/HTTP traces endpoint, e.g. http://collector:4318/v1/traces. */
  otlpUrl?: string;
  spanProcessors?: SpanProcessor[];
  serviceName: string;
  attributes?: Attributes;
}

const propagator = new W3CTraceContextPropagator();
let contextManagerSet = false;

export function createTracing(options: TracingOptions): Tracing {
  const processors = [
    ...(options.spanProcessors ?? []),
    ...(options.otlpUrl ? [new BatchSpanProcessor(new OTLPTraceExporter({ url: options.otlpUrl }))] : []),
  ];
  if (processors.length === 0) return disabledTracing;
  if (!contextManagerSet) {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    contextManagerSet = true;
  }
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ "service.name": options.serviceName, ...options.attributes }),
    spanProcessors: processors,
  });
  const tracer = provider.getTracer("foya");
  return {
    enabled: true,
    tracer,
    inSpan: (name, attributes, work) => runInSpan(tracer, name, attributes, work),
    carrier() {
      const carrier: Record<string, string> = {};
      propagator.inject(context.active(), carrier, {
        set: (target, key, value) => {
          target[key] = value;
        },
      });
      return carrier.traceparent;
    },
    contextOf(traceparent) {
      if (!traceparent) return ROOT_CONTEXT;
      return propagator.extract(
        ROOT_CONTEXT,
        { traceparent },
        { get: (carrier, key) => carrier[key as "traceparent"], keys: (carrier) => Object.keys(carrier) },
      );
    },
    async shutdown() {
      await provider.shutdown();
    },
  };
}

function runInSpan<T>(tracer: Tracer, name: string, attributes: Attributes, work: (span: Span) => Promise<T>): Promise<T> {
  return tracer.startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await work(span);
    } catch (error) {
      span.recordException(error instanceof Error ? error : String(error));
      span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      throw error;
    } finally {
      span.end();
    }
  });
}

const noopTracer = trace.getTracer("foya-disabled");
const disabledTracing: Tracing = {
  enabled: false,
  tracer: noopTracer,
  inSpan: (_name, _attributes, work) => work(trace.wrapSpanContext({ traceId: "", spanId: "", traceFlags: 0 })),
  carrier: () => undefined,
  contextOf: () => ROOT_CONTEXT,
  shutdown: async () => undefined,
};

/** The trace id of the active span, for log lines; undefined without one. */
export function activeTraceId(): string | undefined {
  const id = trace.getSpan(context.active())?.spanContext().traceId;
  return id && id !== "00000000000000000000000000000000" && id !== "" ? id : undefined;
}

export { context as otelContext };
