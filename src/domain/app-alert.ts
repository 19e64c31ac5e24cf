/** Where an alert stands: held by Alertmanager and notified, held but silenced or inhibited, or no longer held. */
export type AlertStanding = "firing" | "suppressed" | "resolved";

/** One period an alert fired, as the dashboard and the Alerts RPC show it. */
export interface AppAlert {
  fingerprint: string;
  labels: Readonly<Record<string, string>>;
  annotations: Readonly<Record<string, string>>;
  state: AlertStanding;
  /** When it started firing, seconds since the epoch. */
  startsAt: number;
  /** When it was seen resolved, seconds since the epoch (resolved ones only). */
  endedAt?: number;
  generatorUrl?: string;
}

/** The alerts of an app, from wherever they are kept (Alertmanager: src/alerts/). */
export interface AlertSource {
  /**
   * The alerts whose `app` label is `app` that fired at any time in
   * [from, to) (seconds; undefined: no bound).
   */
  alertsOf(app: string, from: number | undefined, to: number | undefined, signal: AbortSignal): Promise<AppAlert[]>;
}
