"""What a run reports: cost estimates before it starts and the HTML/JSON report after it ends."""
