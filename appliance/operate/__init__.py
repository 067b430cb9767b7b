"""Running the appliance: checking its health, backing it up and restoring it."""
