import { UsageError } from "../cli-errors.js";
import type { CommandInput } from "./command.js";

/** A string option's value, or undefined when not given. */
export function stringOption(input: CommandInput, name: string): string | undefined {
  const value = input.options[name];
  return typeof value === "string" ? value : undefined;
}

export function booleanOption(input: CommandInput, name: string): boolean {
  return input.options[name] === true;
}

/** A string option that must be one of `allowed`. */
export function choiceOption<Choice extends string>(input: CommandInput, name: string, allowed: readonly Choice[]): Choice | undefined {
  const value = stringOption(input, name);
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value))
    throw new UsageError(`--${name} must be one of ${allowed.join(", ")} (got ${JSON.stringify(value)})`);
  return value as Choice;
}

/** A whole number ≥ 0, such as an event sequence number. */
export function countOption(input: CommandInput, name: string): number | undefined {
  const value = stringOption(input, name);
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value)))
    throw new UsageError(`--${name} must be a whole number ≥ 0 (got ${JSON.stringify(value)})`);
  return Number(value);
}

/** The positional at `index`; the dispatcher has checked the required ones are there. */
export function argument(input: CommandInput, index: number): string {
  const value = input.positionals[index];
  if (value === undefined) throw new UsageError("a required argument is missing");
  return value;
}
