/**
 * Prometheus's text exposition format (version 0.0.4), written by hand for
 * the metrics whose series come and go with the traffic (request metrics,
 * log-based metrics): prom-client builds an object per sample at every
 * scrape, which at 5,000 histogram series took longer than a scrape should.
 */

/** A label value as the text format writes it: backslash, double quote and line feed escaped. */
export function escapeLabelValue(value: string): string {
  return /[\\"\n]/.test(value) ? value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n") : value;
}

/** `name="value",…` of label names and their values, escaped (no braces). */
export function labelText(names: readonly string[], values: readonly string[]): string {
  let text = "";
  for (let i = 0; i < names.length; i++) text += `${i === 0 ? "" : ","}${names[i]}="${escapeLabelValue(values[i]!)}"`;
  return text;
}

/** The `# HELP` and `# TYPE` lines of a metric family. */
export function familyHeader(name: string, type: "counter" | "gauge" | "histogram", help: string): string {
  return `# HELP ${name} ${help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}\n# TYPE ${name} ${type}\n`;
}

/** A sample's value: integers as integers, other numbers as JavaScript writes them, infinities as Prometheus does. */
export function sampleValue(value: number): string {
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  return Number.isNaN(value) ? "NaN" : String(value);
}

/** A metric name Prometheus takes. */
export const metricNamePattern = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
/** A label name Prometheus takes (names starting with __ are reserved). */
export const labelNamePattern = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
