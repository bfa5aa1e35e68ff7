/** Paths outside the workspace that are harmless to read or write. */
const harmlessDevices: ReadonlySet<string> = new Set([
  "/dev/null",
  "/dev/stdin",
  "/dev/stdout",
  "/dev/stderr",
  "/dev/zero",
  "/dev/random",
  "/dev/urandom",
  "/dev/tty",
]);

export function isHarmlessDevice(text: string): boolean {
  return harmlessDevices.has(text) || /^\/dev\/fd\/\d+$/.test(text);
}
