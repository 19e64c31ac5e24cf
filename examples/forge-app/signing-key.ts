/** The key of signed artifact URLs when FORGE_SIGNING_KEY is not set: for trying the example only. */
export const developmentSigningKey = "forge-example-development-key";
