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
  const documentFrequency = new Map<string, number>();
  for (const doc of documents) for (const token of doc.frequencies.keys()) documentFrequency.set(token, (documentFrequency.get(token) ?? 0) + 1);
  const byName = new Map(documents.map((doc) => [doc.name.toLowerCase(), doc.name]));

  return {
    search(query, { limit, allowed }) {
      const terms = [...new Set(tokenize(query))];
      const exact = byName.get(query.trim().toLowerCase());
      const scored: Array<{ name: string; score: number }> = [];
      for (const doc of documents) {
        if (allowed && !allowed(doc.name)) continue;
        let score = 0;
        for (const term of terms) {
          const frequency = doc.frequencies.get(term);
          if (!frequency) continue;
          const df = documentFrequency.get(term) ?? 0;
          const idf = Math.log(1 + (documents.length - df + 0.5) / (df + 0.5));
          score += (idf * frequency * (k1 + 1)) / (frequency + k1 * (1 - b + (b * doc.length) / averageLength));
        }
        if (doc.name === exact) score = Number.POSITIVE_INFINITY;
        if (score > 0) scored.push({ name: doc.name, score });
      }
      scored.sort((x, y) => y.score - x.score || (x.name < y.name ? -1 : 1));
      return scored.slice(0, limit).map((entry) => entry.name);
    },
  };
}
