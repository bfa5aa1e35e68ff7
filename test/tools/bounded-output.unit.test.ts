import { describe, expect, it } from "vitest";
import { BoundedOutput } from "../../src/tools/shell/bounded-output.js";

const lines = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `line ${from + i}\n`).join("");

describe("bounded output", () => {
  it("O1: keeps everything while it fits", () => {
    const output = new BoundedOutput(16, 32);
    output.write(Buffer.from("a\nb\n"));
    expect(output.render()).toBe("a\nb\n");
    expect([output.bytes, output.lines]).toEqual([4, 2]);
  });

  it("O1: keeps the head and tail exactly, on whole lines, and counts what it left out", () => {
    const all = lines(1, 1000);
    const output = new BoundedOutput(40, 100);
    // Written in odd-sized pieces, to exercise the ring buffer's wrap-around.
    for (let at = 0; at < all.length; at += 7) output.write(Buffer.from(all.slice(at, at + 7)));
    const text = output.render();
    const [head, tail] = text.split(/\[… .* omitted …\]\n/);
    expect(all.startsWith(head!)).toBe(true);
    expect(head!.endsWith("\n")).toBe(true);
    expect(all.endsWith(tail!)).toBe(true);
    expect(tail).toBe(all.slice(-tail!.length));
    expect(head!.length).toBeLessThanOrEqual(40);
    expect(tail!.length).toBeLessThanOrEqual(100);
    const keptLines = (head! + tail!).split("\n").length - 1;
    const omittedBytes = all.length - head!.length - tail!.length;
    expect(text).toContain(`[… ${1000 - keptLines} of 1000 lines and ${omittedBytes} of ${all.length} bytes omitted …]`);
  });

  it("O1: counts a last line without a newline", () => {
    const output = new BoundedOutput(4, 4);
    output.write(Buffer.from("x".repeat(20)));
    expect([output.bytes, output.lines]).toEqual([20, 1]);
    expect(output.render()).toContain("[… 0 of 1 lines and 12 of 20 bytes omitted …]");
  });
});
