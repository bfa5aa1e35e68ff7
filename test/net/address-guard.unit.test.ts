import { describe, expect, it } from "vitest";
import { refusedHost, refusedLiteralHost } from "../../src/net/address-guard.js";

describe("address guard", () => {
  it("S10: loopback and private addresses are refused in every IPv6 spelling of an IPv4 address", async () => {
    for (const host of [
      "127.0.0.1",
      "[::1]",
      "[::7f00:1]",
      "[::127.0.0.1]",
      "[::ffff:127.0.0.1]",
      "[::ffff:7f00:1]",
      "[::a00:1]",
      "[64:ff9b::7f00:1]",
      "[2002:7f00:1::]",
      "localhost",
      "10.0.0.1",
      "169.254.169.254",
      "[::]",
    ]) {
      expect(refusedLiteralHost(host), host).not.toBeNull();
      expect(await refusedHost(host), host).not.toBeNull();
    }
    for (const host of ["8.8.8.8", "[2606:4700:4700::1111]", "[::ffff:8.8.8.8]", "[::808:808]"])
      expect(refusedLiteralHost(host), host).toBeNull();
  });
});
