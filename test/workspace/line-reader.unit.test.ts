import { describe, expect, it } from "vitest";
import { readLines, type LineReadOptions } from "../../src/workspace/line-reader.js";

const generous: LineReadOptions = { offset: 1, limit: 100, maxLineChars: 100, maxOutputBytes: 1_000_000, maxScanBytes: 1_000_000_000 };

async function* chunksOf(...parts: Array<string | Buffer | number[]>): AsyncGenerator<Buffer> {
  for (const part of parts) yield typeof part === "string" ? Buffer.from(part) : Buffer.from(part);
}

function read(parts: Array<string | Buffer | number[]>, options: Partial<LineReadOptions> = {}) {
  return readLines(chunksOf(...parts), { ...generous, ...options });
}

const texts = (result: { lines: Array<{ text: string }> }) => result.lines.map((line) => line.text);

describe("readLines", () => {
  it("numbers the lines of a small file and counts them exactly", async () => {
    const result = await read(["one\ntwo\nthree\n"]);
    expect(result).toEqual({
      lines: [
        { number: 1, text: "one", cut: 0 },
        { number: 2, text: "two", cut: 0 },
        { number: 3, text: "three", cut: 0 },
      ],
      totalLines: 3,
      totalIsExact: true,
      scannedBytes: 14,
      stoppedByOutputBytes: false,
      cancelled: false,
    });
  });

  it("counts a last line without a newline, an empty line, and an empty file", async () => {
    expect(texts(await read(["one\ntw", "o"]))).toEqual(["one", "two"]);
    expect(await read(["\n"])).toMatchObject({ lines: [{ number: 1, text: "", cut: 0 }], totalLines: 1 });
    expect(await read(["a\n\nb\n"])).toMatchObject({ totalLines: 3, lines: [{ text: "a" }, { text: "" }, { text: "b" }] });
    expect(await read([])).toMatchObject({ lines: [], totalLines: 0, totalIsExact: true });
  });

  it("keeps the \\r of CRLF line ends, as the read tool always has", async () => {
    expect(texts(await read(["a\r\nb\r", "\nc"]))).toEqual(["a\r", "b\r", "c"]);
  });

  it("takes lines from offset up to limit and still counts to the end", async () => {
    const file = "1\n2\n3\n4\n5\n";
    const result = await read([file], { offset: 2, limit: 2 });
    expect(result.lines).toEqual([
      { number: 2, text: "2", cut: 0 },
      { number: 3, text: "3", cut: 0 },
    ]);
    expect(result).toMatchObject({ totalLines: 5, totalIsExact: true });
    expect(await read([file], { offset: 10 })).toMatchObject({ lines: [], totalLines: 5, totalIsExact: true });
    expect(await read([file], { offset: 0, limit: 1 })).toMatchObject({ lines: [{ number: 1 }], totalLines: 5 });
  });

  it("decodes characters split across chunks whole", async () => {
    const bytes = Buffer.from("é😀中\nx😀\n");
    const oneByteChunks = [...bytes].map((byte) => [byte]);
    expect(texts(await read(oneByteChunks))).toEqual(["é😀中", "x😀"]);
    // Also while only counting the cut part of a line.
    expect((await read(oneByteChunks, { maxLineChars: 1 })).lines).toEqual([
      { number: 1, text: "é", cut: 3 },
      { number: 2, text: "x", cut: 2 },
    ]);
  });

  it("turns invalid UTF-8 into U+FFFD instead of throwing", async () => {
    expect(texts(await read([[0x61, 0xff, 0x62, 0x0a, 0xe2, 0x82], [0x0a, 0xc3], [0x63]]))).toEqual(["a\uFFFDb", "\uFFFD", "\uFFFDc"]);
  });

  it("agrees with decoding the whole file, for random bytes cut into random chunks", async () => {
    let seed = 42;
    const random = (below: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % below;
    };
    const alphabet = [0x61, 0x0a, 0x0d, 0xc3, 0xa9, 0xe4, 0xb8, 0xad, 0xf0, 0x9f, 0x98, 0x80, 0xff, 0x62];
    for (let round = 0; round < 300; round++) {
      const file = Buffer.from(Array.from({ length: random(400) }, () => alphabet[random(alphabet.length)] as number));
      const chunks: Buffer[] = [];
      for (let start = 0; start < file.length; ) {
        const end = start + 1 + random(40);
        chunks.push(file.subarray(start, end));
        start = end;
      }
      const maxLineChars = random(30);
      const result = await readLines(chunksOf(...chunks), { ...generous, limit: 1000, maxLineChars });
      const expected = new TextDecoder().decode(file).split("\n");
      if (expected.at(-1) === "") expected.pop();
      expect(result.totalLines).toBe(expected.length);
      expect(result.lines.map((line) => `${line.text}|${line.cut}`)).toEqual(
        expected.map((line) => {
          let kept = line.slice(0, maxLineChars);
          const last = kept.charCodeAt(kept.length - 1);
          if (kept.length < line.length && last >= 0xd800 && last <= 0xdbff) kept = kept.slice(0, -1);
          return `${kept}|${line.length - kept.length}`;
        }),
      );
    }
  });

  it("cuts a long line at maxLineChars and counts what was left out, never splitting a surrogate pair", async () => {
    const result = await read(["short\n", "x".repeat(3000), "x".repeat(2000), "\nend"], { maxLineChars: 100 });
    expect(result.lines[1]).toEqual({ number: 2, text: "x".repeat(100), cut: 4900 });
    expect(result.lines.filter((line) => line.cut > 0)).toHaveLength(1);
    expect((await read(["a😀b\n"], { maxLineChars: 2 })).lines[0]).toEqual({ number: 1, text: "a", cut: 3 });
  });

  it("stops adding lines at maxOutputBytes (text bytes plus a newline each) and keeps counting", async () => {
    const result = await read(["aaaa\n".repeat(10)], { maxOutputBytes: 12 });
    expect(result).toMatchObject({ stoppedByOutputBytes: true, totalLines: 10, totalIsExact: true });
    expect(result.lines.map((line) => line.number)).toEqual([1, 2]);
  });

  it("stops scanning at maxScanBytes, and then the total is only a lower bound", async () => {
    const file = "aaaa\n".repeat(10);
    const result = await read([file.slice(0, 20), file.slice(20)], { limit: 2, maxScanBytes: 23 });
    // Four whole lines and three bytes of the fifth were read.
    expect(result).toMatchObject({ scannedBytes: 23, totalLines: 5, totalIsExact: false, stoppedByOutputBytes: false });
    expect(result.lines.map((line) => line.number)).toEqual([1, 2]);
    const notReached = await read([file], { offset: 8, maxScanBytes: 23 });
    expect(notReached).toMatchObject({ lines: [], totalLines: 5, totalIsExact: false });
    expect(await read([file], { maxScanBytes: file.length })).toMatchObject({ totalLines: 10, totalIsExact: true });
  });

  it("stops when the signal aborts, and reports it cancelled rather than throwing", async () => {
    const controller = new AbortController();
    async function* abortingAfterTwo(): AsyncGenerator<Buffer> {
      for (let index = 0; ; index++) {
        if (index === 2) controller.abort();
        yield Buffer.from(`line ${index}\n`);
      }
    }
    const result = await readLines(abortingAfterTwo(), { ...generous, signal: controller.signal });
    expect(result).toMatchObject({ cancelled: true, totalIsExact: false, totalLines: 2 });

    const throwing = new AbortController();
    async function* throwsOnAbort(): AsyncGenerator<Buffer> {
      yield Buffer.from("first\n");
      throwing.abort();
      throw new DOMException("The operation was aborted", "AbortError");
    }
    expect(await readLines(throwsOnAbort(), { ...generous, signal: throwing.signal })).toMatchObject({
      cancelled: true,
      lines: [{ text: "first" }],
    });

    async function* failing(): AsyncGenerator<Buffer> {
      yield Buffer.from("first\n");
      throw new Error("EIO");
    }
    await expect(readLines(failing(), generous)).rejects.toThrow("EIO");
  });

  it("S6: a 1 GB file of one line is read in linear time with bounded memory", async () => {
    const mebibyte = 1024 * 1024;
    const rssBefore = process.memoryUsage().rss;
    let rssPeak = rssBefore;
    async function* oneGigabyteLine(): AsyncGenerator<Buffer> {
      for (let index = 0; index < 1024; index++) {
        rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
        yield Buffer.alloc(mebibyte, "a");
      }
    }
    const started = performance.now();
    const result = await readLines(oneGigabyteLine(), {
      offset: 1,
      limit: 2000,
      maxLineChars: 2000,
      maxOutputBytes: 256 * 1024,
      maxScanBytes: 2 * 1024 * mebibyte,
    });
    const elapsed = performance.now() - started;
    expect(result).toMatchObject({ totalLines: 1, totalIsExact: true, scannedBytes: 1024 * mebibyte, cancelled: false });
    expect(result.lines).toEqual([{ number: 1, text: "a".repeat(2000), cut: 1024 * mebibyte - 2000 }]);
    expect(rssPeak - rssBefore).toBeLessThan(200 * mebibyte);
    expect(elapsed).toBeLessThan(20_000);
  });
});
