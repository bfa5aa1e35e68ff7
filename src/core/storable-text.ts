/**
 * Postgres text and jsonb cannot hold NUL characters or unpaired UTF-16
 * surrogates, and neither has a UTF-8 encoding. Text from a model or a tool
 * passes through here before it is stored or shown, with each such character
 * replaced by U+FFFD, so one odd character never fails a commit.
 */
export function storableText(text: string): string {
  const wellFormed = text.toWellFormed();
  return wellFormed.includes("\u0000") ? wellFormed.replaceAll("\u0000", "\uFFFD") : wellFormed;
}
