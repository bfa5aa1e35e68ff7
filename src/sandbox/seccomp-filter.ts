import { endianness } from "node:os";
import { cloneCalls, deniedSyscalls, personality, socketCalls } from "./seccomp-syscalls.js";

/**
 * The sandbox's default seccomp filter (SPEC S3, S7): a classic BPF program,
 * as bwrap's `--seccomp FD` takes it (an array of `struct sock_filter`, in the
 * machine's byte order). bwrap installs it just before it runs the command, so
 * every process of the call lives with it, and none can take it off.
 *
 * The program, in order:
 * 1. A system call made through another ABI than the worker's own (i386's
 *    `int 0x80` on x86_64, AArch32 on arm64) kills the process: the numbers
 *    below mean other calls there, so nothing else can be judged.
 * 2. On x86_64, an x32 call (number with bit 30 set) kills the process too,
 *    for the same reason.
 * 3. A denied call (`seccomp-syscalls.ts`) fails with EPERM, as a call the
 *    sandbox's missing capabilities refuse would.
 * 4. `personality` passes only with the usual values, `socket` and
 *    `socketpair` only without AF_VSOCK, `clone` only without namespace flags
 *    (their first argument's low 32 bits: the kernel reads these arguments as
 *    32-bit values); `clone3` answers ENOSYS (libc then uses `clone`).
 * 5. Everything else is allowed.
 */

interface Target {
  /** AUDIT_ARCH_* of the native ABI, as `seccomp_data.arch` reports it. */
  auditArch: number;
  key: "x64" | "arm64";
  /** x86_64's x32 ABI shares AUDIT_ARCH_X86_64; its calls carry this bit. */
  x32Bit?: number;
}

const targets: Record<string, Target> = {
  x64: { auditArch: 0xc000003e, key: "x64", x32Bit: 0x40000000 },
  arm64: { auditArch: 0xc00000b7, key: "arm64" },
};

// Opcodes (linux/filter.h, linux/bpf_common.h) and return values (linux/seccomp.h).
const loadWordAbsolute = 0x20; // BPF_LD | BPF_W | BPF_ABS
const jumpIfEqual = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const jumpIfGreaterOrEqual = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const jumpIfAnyBit = 0x45; // BPF_JMP | BPF_JSET | BPF_K
const jumpAlways = 0x05; // BPF_JMP | BPF_JA
const returnConstant = 0x06; // BPF_RET | BPF_K
const killProcess = 0x80000000;
const allow = 0x7fff0000;
const errnoEperm = 0x00050000 | 1;
const errnoEnosys = 0x00050000 | 38;

// Offsets in struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6].
const nrOffset = 0;
const archOffset = 4;
/** The low 32 bits of args[0]. */
const firstArgumentLowOffset = endianness() === "LE" ? 16 : 20;

/** A jump target: another instruction's label, or the next instruction. */
type Label = string | null;
type Instruction = { label?: string } & (
  | { op: "load"; offset: number }
  | { op: "jeq" | "jge" | "jset"; value: number; whenTrue: Label; whenFalse: Label }
  | { op: "jump"; to: Label }
  | { op: "return"; value: number }
);

const verdicts = { allow, deny: errnoEperm } as const;

function program(target: Target): Instruction[] {
  const ids = (calls: ReadonlyArray<{ x64?: number; arm64?: number }>) =>
    calls.map((call) => call[target.key]).filter((nr): nr is number => nr !== undefined);
  const code: Instruction[] = [
    { op: "load", offset: archOffset },
    { op: "jeq", value: target.auditArch, whenTrue: null, whenFalse: "kill" },
    { op: "load", offset: nrOffset },
  ];
  if (target.x32Bit !== undefined) code.push({ op: "jge", value: target.x32Bit, whenTrue: "kill", whenFalse: null });
  for (const nr of ids(deniedSyscalls)) code.push({ op: "jeq", value: nr, whenTrue: "deny", whenFalse: null });
  code.push({ op: "jeq", value: cloneCalls.clone3[target.key], whenTrue: "no-such-call", whenFalse: null });
  // Calls judged by their first argument: a block entered only for its own calls, which always returns;
  // the other calls jump over it with the call number still loaded.
  const byArgument = [
    { calls: [personality[target.key]], values: personality.allowed, matched: "allow", otherwise: "deny" },
    { calls: socketCalls[target.key], values: socketCalls.deniedFamilies, matched: "deny", otherwise: "allow" },
    { calls: [cloneCalls[target.key]], anyOf: cloneCalls.namespaceFlags, matched: "deny", otherwise: "allow" },
  ] as const;
  byArgument.forEach((rule, index) => {
    const block = `argument-${index}`;
    for (const nr of rule.calls) code.push({ op: "jeq", value: nr, whenTrue: block, whenFalse: null });
    code.push({ op: "jump", to: `after-${block}` });
    code.push({ op: "load", offset: firstArgumentLowOffset, label: block });
    if ("anyOf" in rule) code.push({ op: "jset", value: rule.anyOf, whenTrue: rule.matched, whenFalse: null });
    else for (const value of rule.values) code.push({ op: "jeq", value, whenTrue: rule.matched, whenFalse: null });
    code.push({ op: "return", value: verdicts[rule.otherwise] });
    // Where the calls the block is not for go on: a jump of 0, to whatever follows.
    code.push({ op: "jump", to: null, label: `after-${block}` });
  });
  code.push(
    { op: "return", value: allow, label: "allow" },
    { op: "return", value: errnoEperm, label: "deny" },
    { op: "return", value: errnoEnosys, label: "no-such-call" },
    { op: "return", value: killProcess, label: "kill" },
  );
  return code;
}

/** Lays the instructions out: jumps are relative and forward only (conditional ones at most 255 instructions). */
function assemble(code: readonly Instruction[]): Buffer {
  const at = new Map<string, number>();
  code.forEach((instruction, index) => {
    if (instruction.label !== undefined) at.set(instruction.label, index);
  });
  const offset = (from: number, label: Label, max = 255): number => {
    if (label === null) return 0;
    const to = at.get(label);
    if (to === undefined || to <= from || to - from - 1 > max) throw new Error(`seccomp filter: no forward jump to ${label}`);
    return to - from - 1;
  };
  const out = Buffer.alloc(code.length * 8);
  const le = endianness() === "LE";
  code.forEach((instruction, index) => {
    const [op, jt, jf, k] =
      instruction.op === "load"
        ? [loadWordAbsolute, 0, 0, instruction.offset]
        : instruction.op === "return"
          ? [returnConstant, 0, 0, instruction.value]
          : instruction.op === "jump"
            ? [jumpAlways, 0, 0, offset(index, instruction.to, 0xffff)]
            : [
                { jeq: jumpIfEqual, jge: jumpIfGreaterOrEqual, jset: jumpIfAnyBit }[instruction.op],
                offset(index, instruction.whenTrue),
                offset(index, instruction.whenFalse),
                instruction.value,
              ];
    const base = index * 8;
    if (le) {
      out.writeUInt16LE(op, base);
      out.writeUInt32LE(k >>> 0, base + 4);
    } else {
      out.writeUInt16BE(op, base);
      out.writeUInt32BE(k >>> 0, base + 4);
    }
    out.writeUInt8(jt, base + 2);
    out.writeUInt8(jf, base + 3);
  });
  return out;
}

const compiled = new Map<string, Buffer>();

/** The compiled filter for this machine's architecture (`process.arch`), or null where Foya has no syscall table. */
export function seccompFilter(arch: string = process.arch): Buffer | null {
  const target = targets[arch];
  if (!target) return null;
  let filter = compiled.get(arch);
  if (!filter) {
    filter = assemble(program(target));
    compiled.set(arch, filter);
  }
  return filter;
}
