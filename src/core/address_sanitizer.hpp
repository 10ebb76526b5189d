// ATTNBENCH_ADDRESS_SANITIZER is 1 in a build with AddressSanitizer, from g++
// (__SANITIZE_ADDRESS__) or clang (__has_feature(address_sanitizer)), else 0.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define ATTNBENCH_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ATTNBENCH_ADDRESS_SANITIZER 1
#endif
#endif
#ifndef ATTNBENCH_ADDRESS_SANITIZER
#define ATTNBENCH_ADDRESS_SANITIZER 0
#endif
