import { endianness } from "node:os";
import { describe, expect, it } from "vitest";
import { seccompFilter } from "../../src/sandbox/seccomp-filter.js";
import { deniedSyscalls } from "../../src/sandbox/seccomp-syscalls.js";

// The filter is checked by running it: a small classic-BPF interpreter over struct seccomp_data, as the kernel does.
const auditArch = { x64: 0xc000003e, arm64: 0xc00000b7, i386: 0x40000003, arm: 0x40000028 };
const verdict = { allow: 0x7fff0000, eperm: 0x00050001, enosys: 0x00050026, kill: 0x80000000 };

function decide(filter: Buffer, arch: number, nr: number, firstArgument = 0n): number {
  const data = Buffer.alloc(64);
  const le = endianness() === "LE";
  const u32 = (value: number, at: number) => (le ? data.writeUInt32LE(value >>> 0, at) : data.writeUInt32BE(value >>> 0, at));
  u32(nr, 0);
  u32(arch, 4);
  if (le) data.writeBigUInt64LE(firstArgument, 16);
  else data.writeBigUInt64BE(firstArgument, 16);
  let accumulator = 0;
  for (let pc = 0, steps = 0; pc < filter.length / 8 && steps < 10_000; steps++) {
    const at = pc * 8;
    const code = le ? filter.readUInt16LE(at) : filter.readUInt16BE(at);
    const [jt, jf] = [filter.readUInt8(at + 2), filter.readUInt8(at + 3)];
    const k = le ? filter.readUInt32LE(at + 4) : filter.readUInt32BE(at + 4);
    switch (code) {
      case 0x20: // ld [k]
        accumulator = le ? data.readUInt32LE(k) : data.readUInt32BE(k);
        pc++;
        break;
      case 0x15: // jeq #k
        pc += 1 + (accumulator === k ? jt : jf);
        break;
      case 0x35: // jge #k
        pc += 1 + (accumulator >= k ? jt : jf);
        break;
      case 0x45: // jset #k
        pc += 1 + ((accumulator & k) !== 0 ? jt : jf);
        break;
      case 0x05: // ja
        pc += 1 + k;
        break;
      case 0x06: // ret #k
        return k;
      default:
        throw new Error(`unexpected instruction ${code.toString(16)} at ${pc}`);
    }
  }
  throw new Error("the filter ran off its end");
}

describe("the sandbox's seccomp filter", () => {
  for (const arch of ["x64", "arm64"] as const) {
    const filter = seccompFilter(arch);
    if (!filter) throw new Error(`no filter for ${arch}`);
    const run = (nr: number, argument?: bigint) => decide(filter, auditArch[arch], nr, argument);

    it(`S3: ${arch}: every denied system call fails with EPERM, ordinary ones pass`, () => {
      const denied = deniedSyscalls.map((call) => call[arch]).filter((nr): nr is number => nr !== undefined);
      expect(denied.length).toBeGreaterThan(40);
      for (const nr of denied) expect(run(nr), `syscall ${nr}`).toBe(verdict.eperm);
      // Restated from the kernel's tables: ptrace, keyctl, unshare, mount, bpf, io_uring_setup.
      const restated = arch === "x64" ? [101, 250, 272, 165, 321, 425] : [117, 219, 97, 40, 280, 425];
      for (const nr of restated) expect(run(nr), `syscall ${nr}`).toBe(verdict.eperm);
      // read, write, openat, execve, clone, exit_group, wait4, mmap, futex.
      const ordinary = arch === "x64" ? [0, 1, 257, 59, 56, 231, 61, 9, 202] : [63, 64, 56, 221, 220, 94, 260, 222, 98];
      for (const nr of ordinary) expect(run(nr), `syscall ${nr}`).toBe(verdict.allow);
    });

    it(`S3: ${arch}: personality passes only with the usual values, socket and socketpair only without AF_VSOCK`, () => {
      const [personality, socket, socketpair] = arch === "x64" ? [135, 41, 53] : [92, 198, 199];
      for (const value of [0x0n, 0x8n, 0x20000n, 0x20008n, 0xffffffffn]) expect(run(personality, value)).toBe(verdict.allow);
      // ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC: randomization off, executable data.
      for (const value of [0x0040000n, 0x0400000n]) expect(run(personality, value)).toBe(verdict.eperm);
      for (const call of [socket, socketpair]) {
        for (const family of [1n, 2n, 10n, 16n]) expect(run(call, family)).toBe(verdict.allow);
        expect(run(call, 40n)).toBe(verdict.eperm);
        // The kernel reads the family as a 32-bit int: high bits set change nothing.
        expect(run(call, (1n << 32n) | 40n)).toBe(verdict.eperm);
      }
    });

    it(`S3: ${arch}: clone makes processes and threads but no namespace; clone3 answers ENOSYS, so the C library uses clone`, () => {
      const [clone, clone3] = arch === "x64" ? [56, 435] : [220, 435];
      // fork (CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD) and a pthread's flags.
      for (const flags of [0x01200011n, 0x003d0f00n]) expect(run(clone, flags)).toBe(verdict.allow);
      // CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET, each with SIGCHLD.
      for (const flags of [0x10000011n, 0x00020011n, 0x20000011n, 0x40000011n]) expect(run(clone, flags)).toBe(verdict.eperm);
      expect(run(clone3)).toBe(verdict.enosys);
    });

    it(`S3: ${arch}: a system call through another ABI kills the process`, () => {
      for (const foreign of [auditArch.i386, auditArch.arm, arch === "x64" ? auditArch.arm64 : auditArch.x64])
        expect(decide(filter, foreign, 0)).toBe(verdict.kill);
      // x32: x86_64's numbers with bit 30 set, under x86_64's own AUDIT_ARCH.
      if (arch === "x64") for (const nr of [0x40000000, 0x40000000 + 101, 0x40000000 + 250]) expect(run(nr)).toBe(verdict.kill);
    });
  }

  it("S3: no filter is made for an architecture without a system call table: the sandbox then fails closed", () => {
    expect(seccompFilter("riscv64")).toBeNull();
    expect(seccompFilter("x64")).toBe(seccompFilter("x64"));
  });
});
