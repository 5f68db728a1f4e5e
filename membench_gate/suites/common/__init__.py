"""What every suite shares: fixture loading helpers, the files a suite reads, seeded shuffles."""
