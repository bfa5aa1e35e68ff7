import type { Queryable } from "./sql-text.js";

/**
 * Named statements: SQL text with `:callId` placeholders, compiled once at load into the
 * `$n` text Postgres prepares, and run with a typed parameter object. A caller writes
 * `{ tenantId, sessionId }` by name instead of matching 22 positions to a header by eye, so
 * a value in the wrong place is a visible (and, for a missing or misspelt name, a type)
 * error. The statement is still one named prepared statement: Postgres parses and plans it
 * once per connection, and nothing is compiled per call.
 */

/** A compiled statement: its prepared name, its positional text, and which parameter each `$n` takes. */
export interface Statement<Params extends object, Row> {
  readonly name: string;
  readonly text: string;
  /** `order[n - 1]` is the parameter `$n` stands for. */
  readonly order: readonly (keyof Params & string)[];
  /** Type-level only: the parameters and the shape of one row. */
  readonly params?: Params;
  readonly row?: Row;
}

const names = new Set<string>();

/**
 * Declares a prepared statement; names are unique per process, as pg requires per connection.
 * Each `:name` becomes `$n` (the same name, the same `$n`); `::type` casts, quoted strings and
 * quoted identifiers are left alone. Positional `$n` in the text is refused: one style per statement.
 */
export function statement<Params extends object, Row = Record<string, never>>(name: string, text: string): Statement<Params, Row> {
  if (names.has(name)) throw new Error(`statement ${name} declared twice`);
  names.add(name);
  const { text: positional, order } = compileNamed(text);
  return { name: `foya_${name}`, text: positional, order: order as (keyof Params & string)[] };
}

/**
 * Runs a statement with its parameters by name. Arrays go as Postgres arrays; jsonb values
 * must be passed as JSON text; `null` is SQL null. A parameter the text names but the object
 * lacks (undefined) is refused rather than sent as null.
 */
export async function run<Params extends object, Row>(on: Queryable, statement: Statement<Params, Row>, params: Params): Promise<Row[]> {
  const values: unknown[] = new Array(statement.order.length);
  for (let index = 0; index < statement.order.length; index++) {
    const key = statement.order[index] as keyof Params & string;
    const value = params[key];
    if (value === undefined) throw new Error(`statement ${statement.name}: parameter :${key} is missing`);
    values[index] = value;
  }
  const result = await on.query({ name: statement.name, text: statement.text, values });
  return result.rows as Row[];
}

/** `:name` to `$n`, outside quoted strings and identifiers. Exported for its unit test. */
export function compileNamed(text: string): { text: string; order: string[] } {
  const order: string[] = [];
  let out = "";
  let index = 0;
  while (index < text.length) {
    const char = text[index] as string;
    if (char === "'" || char === '"') {
      const end = closingQuote(text, index);
      out += text.slice(index, end);
      index = end;
      continue;
    }
    if (char === "$" && /[0-9]/.test(text[index + 1] ?? "")) {
      throw new Error(`positional parameter in a named statement: ${text.slice(index, index + 4)}`);
    }
    if (char === ":" && text[index + 1] === ":") {
      out += "::";
      index += 2;
      continue;
    }
    if (char === ":" && !/[\w]/.test(text[index - 1] ?? "")) {
      const match = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(index + 1));
      if (match) {
        const name = match[0];
        let position = order.indexOf(name);
        if (position < 0) position = order.push(name) - 1;
        out += `$${position + 1}`;
        index += 1 + name.length;
        continue;
      }
    }
    out += char;
    index++;
  }
  return { text: out, order };
}

/** The index after the quote that closes the one at `start` (a doubled quote is an escaped one). */
function closingQuote(text: string, start: number): number {
  const quote = text[start];
  let index = start + 1;
  while (index < text.length) {
    if (text[index] === quote) {
      if (text[index + 1] === quote) {
        index += 2;
        continue;
      }
      return index + 1;
    }
    index++;
  }
  throw new Error(`unclosed ${quote} in statement text`);
}
