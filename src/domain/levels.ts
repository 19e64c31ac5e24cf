/** App log levels by number: 0 DEBUG, 1 INFO, 2 WARNING, 3 ERROR, 4 CRITICAL (the CLI and the dashboard name them so). */
export const levelNames = ["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] as const;
