//! spinwise-ec: erasure coding, checksums and the stripe-stack byte format (issue 4; being built).
