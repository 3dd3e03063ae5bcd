package redisquota_test

import (
	"errors"

	"github.com/switchboard-http/switchboard/middleware"
)

func isRateLimited(err error) bool { return errors.Is(err, middleware.ErrRateLimited) }
