from django.core.management.base import BaseCommand, CommandError

from accounts.services import user_make_staff
from hango_project.errors import ApplicationError


class Command(BaseCommand):
    help = (
        "Make an existing user (a tenant's member made by hango_bootstrap, say) staff and "
        "superuser, so they can log in to the admin; createsuperuser refuses a user who exists."
    )

    def add_arguments(self, parser):
        parser.add_argument("--email", required=True, help="The user's email (their username).")

    def handle(self, *args, email, **options):
        try:
            user, changed = user_make_staff(email=email)
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(f"{user.username} is {'now' if changed else 'already'} staff and "
                          "superuser.")
        if not (user.password and user.has_usable_password()):  # bootstrap sets none: ""
            self.stdout.write(f"They have no password yet: python manage.py changepassword "
                              f"{user.username}")
