/**
 * BM25 ranking over tools (SPEC R5). A tool's document is its name split into
 * words (on `_`, `-`, spaces and camelCase), its description and its
 * parameter names; name words count three times and parameter names twice,
 * so a query that names what a tool *is* outranks one that merely mentions it.
 */
export interface SearchableTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface ToolSearchIndex {
  /** Best first; a query equal to a tool's name puts that tool first. */
  search(query: string, options: { limit: number; allowed?: (name: string) => boolean }): string[];
}

const k1 = 1.2;
const b = 0.75;

export function tokenize(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((token) => token.length > 0);
}

function parameterNames(parameters: Record<string, unknown>): string[] {
  const properties = parameters.properties;
  return properties && typeof properties === "object" ? Object.keys(properties) : [];
}

export function buildToolSearchIndex(tools: readonly SearchableTool[]): ToolSearchIndex {
  const documents = tools.map((tool) => {
    const nameTokens = tokenize(tool.name);
    const tokens = [
      ...nameTokens,
      ...nameTokens,
      ...nameTokens,
      ...tokenize(tool.description),
      ...parameterNames(tool.parameters).flatMap((name) => {
        const words = tokenize(name);
        return [...words, ...words];
      }),
    ];
    const frequencies = new Map<string, number>();
    for (const token of tokens) frequencies.set(token, (frequencies.get(token) ?? 0) + 1);
    return { name: tool.name, length: tokens.length, frequencies };
  });
  const averageLength = documents.reduce((sum, doc) => sum + doc.length, 0) / Math.max(1, documents.length);
  // Postings: a query only touches the tools that contain one of its words.
  const postings = new Map<string, Array<{ doc: number; frequency: number }>>();
  documents.forEach((doc, index) => {
    for (const [token, frequency] of doc.frequencies) {
      let list = postings.get(token);
      if (!list) {
        list = [];
        postings.set(token, list);
      }
      list.push({ doc: index, frequency });
    }
  });
  const byName = new Map(documents.map((doc, index) => [doc.name.toLowerCase(), index]));

  return {
    search(query, { limit, allowed }) {
      const scores = new Map<number, number>();
      for (const term of new Set(tokenize(query))) {
        const list = postings.get(term);
        if (!list) continue;
        const idf = Math.log(1 + (documents.length - list.length + 0.5) / (list.length + 0.5));
        for (const { doc, frequency } of list) {
          const length = (documents[doc] as { length: number }).length;
          const score = (idf * frequency * (k1 + 1)) / (frequency + k1 * (1 - b + (b * length) / averageLength));
          scores.set(doc, (scores.get(doc) ?? 0) + score);
        }
      }
      const exact = byName.get(query.trim().toLowerCase());
      if (exact !== undefined) scores.set(exact, Number.POSITIVE_INFINITY);
      const ranked: Array<{ name: string; score: number }> = [];
      for (const [doc, score] of scores) {
        const name = (documents[doc] as { name: string }).name;
        if (!allowed || allowed(name)) ranked.push({ name, score });
      }
      ranked.sort((x, y) => y.score - x.score || (x.name < y.name ? -1 : 1));
      return ranked.slice(0, limit).map((entry) => entry.name);
    },
  };
}
